/**
 * Where an HTTP/1.1 request body ends, seen from the bytes on the wire: by
 * `Content-Length`, or by the chunked encoding's last chunk. Used where
 * corral relays raw connections (the HTTP server's front) to time a body
 * without reading it for the server.
 *
 * @module
 */

/** How a request's body is delimited, or why its head is refused. */
export type BodyFraming =
  | { kind: "none" }
  | { kind: "length"; length: number }
  | { kind: "chunked" }
  | { kind: "bad"; why: string };

/**
 * The framing of a request whose head lines (request line first) are
 * `lines`: both `Content-Length` and `Transfer-Encoding`, two different
 * lengths, or an encoding other than `chunked` are refused (request
 * smuggling).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bodyFraming } from "./http_body.ts";
 * assert.deepEqual(bodyFraming(["POST / HTTP/1.1", "Content-Length: 12"]), { kind: "length", length: 12 });
 * assert.deepEqual(bodyFraming(["POST / HTTP/1.1", "Transfer-Encoding: chunked"]), { kind: "chunked" });
 * assert.equal(bodyFraming(["POST / HTTP/1.1", "Content-Length: 1", "Transfer-Encoding: chunked"]).kind, "bad");
 * ```
 */
export function bodyFraming(lines: string[]): BodyFraming {
  const lengths = new Set<string>();
  const encodings: string[] = [];
  for (const line of lines.slice(1)) {
    const m = /^([^:]+):\s*(.*?)\s*$/.exec(line);
    if (!m) continue;
    const name = m[1].toLowerCase();
    if (name === "content-length") { for (const v of m[2].split(",")) lengths.add(v.trim()); }
    if (name === "transfer-encoding") {
      encodings.push(...m[2].toLowerCase().split(",").map((v) => v.trim()));
    }
  }
  if (encodings.length && lengths.size) {
    return { kind: "bad", why: "both Content-Length and Transfer-Encoding" };
  }
  if (encodings.length) {
    return encodings.length === 1 && encodings[0] === "chunked"
      ? { kind: "chunked" }
      : { kind: "bad", why: `Transfer-Encoding "${encodings.join(", ")}"` };
  }
  if (lengths.size > 1) return { kind: "bad", why: "two different Content-Length values" };
  if (lengths.size === 0) return { kind: "none" };
  const text = [...lengths][0];
  if (!/^\d{1,15}$/.test(text)) return { kind: "bad", why: `Content-Length "${text}"` };
  const length = Number(text);
  return length === 0 ? { kind: "none" } : { kind: "length", length };
}

const _MAX_LINE = 4096;

/**
 * Counts a body's bytes as they pass, and says when it is complete.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BodyMeter } from "./http_body.ts";
 * const m = new BodyMeter({ kind: "chunked" });
 * assert.equal(m.feed(new TextEncoder().encode("3\r\nabc\r\n")), false);
 * assert.equal(m.feed(new TextEncoder().encode("0\r\n\r\n")), true);
 * assert.equal(new BodyMeter({ kind: "length", length: 2 }).feed(new Uint8Array(2)), true);
 * ```
 */
export class BodyMeter {
  /** Body bytes seen so far (framing included for a chunked body). */
  received = 0;
  /** The whole body has passed. */
  done: boolean;
  /** The chunked framing is broken (the front refuses the request). */
  broken = false;
  #framing: BodyFraming;
  // Chunked state: reading a size line, chunk data, the CRLF after it, or trailer lines.
  #state: "size" | "data" | "crlf" | "trailer" = "size";
  #left = 0;
  #line = "";

  constructor(framing: BodyFraming) {
    this.#framing = framing;
    this.done = framing.kind === "none" || framing.kind === "bad";
  }

  /** Feed the next bytes from the client; true once the body is complete. */
  feed(bytes: Uint8Array): boolean {
    if (this.done) return true;
    this.received += bytes.length;
    const f = this.#framing;
    if (f.kind === "length") {
      this.done = this.received >= f.length;
      return this.done;
    }
    for (let i = 0; i < bytes.length && !this.done && !this.broken; i++) this.#byte(bytes[i]);
    if (this.broken) this.done = true;
    return this.done;
  }

  #byte(b: number): void {
    if (this.#state === "data") {
      if (--this.#left === 0) this.#state = "crlf";
      return;
    }
    if (b !== 10) {
      if (b !== 13) this.#line += String.fromCharCode(b);
      if (this.#line.length > _MAX_LINE) this.broken = true;
      return;
    }
    const line = this.#line;
    this.#line = "";
    if (this.#state === "crlf") {
      if (line !== "") this.broken = true;
      this.#state = "size";
    } else if (this.#state === "size") {
      const m = /^([0-9a-fA-F]{1,12})(;.*)?$/.exec(line);
      if (!m) return void (this.broken = true);
      this.#left = parseInt(m[1], 16);
      this.#state = this.#left === 0 ? "trailer" : "data";
    } else if (line === "") this.done = true; // the blank line after the trailers
  }
}
