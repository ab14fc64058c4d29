/**
 * Reading one HTTP request head off a raw connection, bounded: used where
 * corral accepts TCP itself (the egress proxy, the HTTP server's front).
 *
 * @module
 */

/** The head (without its blank line) and whatever arrived after it. */
export interface HttpHead {
  head: Uint8Array;
  rest: Uint8Array;
}

/**
 * Read up to the blank line ending a request head. Undefined when the peer
 * closes or fails first; `"too large"` past `maxBytes`. The buffer grows as
 * needed: an idle connection holds 2 KiB, not `maxBytes`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readHttpHead } from "./http_head.ts";
 * const bytes = new TextEncoder().encode("GET / HTTP/1.1\r\nHost: h\r\n\r\nBODY");
 * let sent = false;
 * const conn = {
 *   read: (b: Uint8Array) => {
 *     if (sent) return Promise.resolve(null);
 *     sent = true;
 *     b.set(bytes);
 *     return Promise.resolve(bytes.length);
 *   },
 * } as unknown as Deno.Conn;
 * const got = await readHttpHead(conn, 1024);
 * assert.ok(got && got !== "too large");
 * assert.equal(new TextDecoder().decode(got.rest), "BODY");
 * ```
 */
export async function readHttpHead(
  conn: Deno.Conn,
  maxBytes: number,
): Promise<HttpHead | "too large" | undefined> {
  let buf = new Uint8Array(2048);
  let got = 0;
  for (;;) {
    if (got === buf.length) {
      if (buf.length >= maxBytes) return "too large";
      const bigger = new Uint8Array(Math.min(maxBytes, buf.length * 4));
      bigger.set(buf);
      buf = bigger;
    }
    let n: number | null;
    try {
      n = await conn.read(buf.subarray(got));
    } catch {
      return undefined;
    }
    if (n === null) return undefined;
    got += n;
    for (let i = Math.max(0, got - n - 3); i + 3 < got; i++) {
      if (buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) {
        return { head: buf.slice(0, i), rest: buf.slice(i + 4, got) };
      }
    }
  }
}
