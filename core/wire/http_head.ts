/**
 * Reading one HTTP request head off a raw connection, bounded: used where
 * corral accepts connections itself (the egress proxy; ./http_request.ts
 * then parses it).
 *
 * @module
 */

/** The largest request head corral reads (request line, fields and blank line). */
export const MAX_HEAD_BYTES = 64 * 1024;

/** The head (without its blank line), the same with it, and whatever arrived after it. */
export interface HttpHead {
  head: Uint8Array;
  whole: Uint8Array;
  rest: Uint8Array;
}

/**
 * Read up to the blank line ending a request head. Undefined when the peer
 * closes or fails first; `"too large"` past `maxBytes`; `"bad"` at once
 * when a line ends in a bare LF or holds a bare CR (llhttp refuses both; a
 * head read by them would never end). The buffer grows as needed: an idle
 * connection holds 2 KiB, not `maxBytes`.
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
 * assert.ok(got && got !== "too large" && got !== "bad");
 * assert.equal(new TextDecoder().decode(got.rest), "BODY");
 * ```
 */
export async function readHttpHead(
  conn: Deno.Conn,
  maxBytes: number,
): Promise<HttpHead | "too large" | "bad" | undefined> {
  let buf = new Uint8Array(2048);
  let got = 0;
  let lead = 0;
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
    // Empty lines before the request line are skipped, as llhttp skips them.
    while (lead < got && (buf[lead] === 13 || buf[lead] === 10)) lead++;
    for (let i = Math.max(lead, got - n - 3); i < got; i++) {
      if (buf[i] === 10 && (i === lead || buf[i - 1] !== 13)) return "bad";
      if (buf[i] === 13 && i + 1 < got && buf[i + 1] !== 10) return "bad";
      if (buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) {
        if (i + 3 >= got) break;
        return { head: buf.slice(0, i), whole: buf.slice(0, i + 4), rest: buf.slice(i + 4, got) };
      }
    }
  }
}
