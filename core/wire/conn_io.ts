/**
 * Writing and copying on raw connections, where corral relays TCP or Unix
 * sockets itself (the egress proxy, the HTTP server's front).
 *
 * @module
 */

/**
 * Write all of `bytes` to `conn` (a write may take only part of them).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { writeAll } from "./conn_io.ts";
 * const seen: number[] = [];
 * const conn = {
 *   write: (b: Uint8Array) => (seen.push(b[0]), Promise.resolve(1)),
 * } as unknown as Deno.Conn;
 * await writeAll(conn, new Uint8Array([1, 2, 3]));
 * assert.deepEqual(seen, [1, 2, 3]);
 * ```
 */
export async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

/**
 * Copy what `from` sends to `to` until `from` ends or either side fails,
 * through a buffer of `bufBytes`; `count` hears each chunk's size, `see`
 * the chunk itself (before it is written).
 * Neither side is closed.
 */
export async function copyConn(
  from: Deno.Conn,
  to: Deno.Conn,
  bufBytes: number,
  count?: (n: number) => void,
  see?: (chunk: Uint8Array) => void,
): Promise<void> {
  const buf = new Uint8Array(bufBytes);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) break;
      count?.(n);
      see?.(buf.subarray(0, n));
      await writeAll(to, buf.subarray(0, n));
    }
  } catch { /* either side gone */ }
}

/** Close `conn`, ignoring one that is closed already. */
export function closeConn(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* already closed */ }
}
