/**
 * An HTTP/1.1 request as the egress proxy reads it (../egress/egress.ts): its head
 * (request line and fields) and where its body ends, as strictly as
 * `node:http`'s parser, llhttp, reads it. The proxy cannot use `node:http`
 * for this: it must relay an absolute-form request's bytes as they came
 * (watched for secret placeholders), and `node:http` hands a handler only
 * the parsed, de-chunked request. So the proxy keeps this small parser, and
 * `core/wire/http_request_fuzz_test.ts` checks on generated requests, valid
 * and malformed, that it accepts and refuses what llhttp does and reads the
 * same method, target, fields and body (a difference is request smuggling).
 *
 * @module
 */

/** How a request's body is delimited. */
export type Framing =
  | { kind: "none" }
  | { kind: "length"; length: number }
  | { kind: "chunked" }
  /** CONNECT: what follows the head is the tunnel. */
  | { kind: "tunnel" };

/** A parsed request head. */
export interface RequestHead {
  method: string;
  /** The request target as sent (origin-form, absolute-form, or `host:port`). */
  target: string;
  /** `HTTP/1.1`, `HTTP/1.0`, … */
  version: string;
  /** The fields in order, names as sent, values without surrounding whitespace. */
  fields: Array<[string, string]>;
  framing: Framing;
}

/** What {@link parseRequestHead} found. */
export type HeadParse =
  | { ok: true; head: RequestHead; size: number }
  | { ok: false; error: string }
  | { ok: "incomplete" };

/** The methods llhttp knows (`node:http`'s `METHODS`); any other is refused. */
export const HTTP_METHODS: readonly string[] = [
  "ACL",
  "BIND",
  "CHECKOUT",
  "CONNECT",
  "COPY",
  "DELETE",
  "GET",
  "HEAD",
  "LINK",
  "LOCK",
  "M-SEARCH",
  "MERGE",
  "MKACTIVITY",
  "MKCALENDAR",
  "MKCOL",
  "MOVE",
  "NOTIFY",
  "OPTIONS",
  "PATCH",
  "POST",
  "PROPFIND",
  "PROPPATCH",
  "PURGE",
  "PUT",
  "QUERY",
  "REBIND",
  "REPORT",
  "SEARCH",
  "SOURCE",
  "SUBSCRIBE",
  "TRACE",
  "UNBIND",
  "UNLINK",
  "UNLOCK",
  "UNSUBSCRIBE",
];
const _METHODS = new Set(HTTP_METHODS);
const _TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// A field value: visible characters, obs-text, spaces and tabs (no other control character).
const _VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const _TARGET = /^[\x21-\x7e]+$/;
// The versions llhttp takes (it refuses HTTP/1.2 or 3.0, not 0.9 or 2.0).
const _VERSION = /^HTTP\/(0\.9|1\.[01]|2\.0)$/;

/**
 * Parse the request head at the start of `bytes`: the head and its size in
 * bytes (blank line included), a refusal naming what is wrong, or
 * `incomplete` when its end has not arrived.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseRequestHead } from "./http_request.ts";
 * const bytes = new TextEncoder().encode("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi");
 * const p = parseRequestHead(bytes);
 * assert.ok(p.ok === true);
 * assert.deepEqual(p.head.framing, { kind: "length", length: 2 });
 * assert.equal(p.size, bytes.length - 2);
 * const smuggled = "POST / HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n";
 * assert.equal(parseRequestHead(new TextEncoder().encode(smuggled)).ok, false);
 * ```
 */
export function parseRequestHead(bytes: Uint8Array): HeadParse {
  // Empty lines before a request line are skipped (RFC 9112, 2.2), as llhttp skips CR and LF.
  const start = _leadingEmpty(bytes);
  if (start === bytes.length) return { ok: "incomplete" };
  const lines = _lines(bytes, start);
  if ("error" in lines) return { ok: false, error: lines.error };
  if (!lines.done) return { ok: "incomplete" };
  const [requestLine, ...fieldLines] = lines.lines;
  if (requestLine === undefined) return _bad("an empty line where the request line belongs");
  const parts = requestLine.split(/ +/); // llhttp takes several spaces between the parts
  if (parts.length !== 3) return _bad(`the request line is not "METHOD TARGET HTTP/1.1"`);
  const [method, target, version] = parts;
  if (!_METHODS.has(method)) return _bad(`unknown method "${_shown(method)}"`);
  if (!_TARGET.test(target) || !_targetForm(method, target)) {
    return _bad(`bad request target "${_shown(target)}"`);
  }
  if (!_VERSION.test(version)) return _bad(`bad HTTP version "${_shown(version)}"`);
  const fields = _fields(fieldLines);
  if ("error" in fields) return _bad(fields.error);
  // Checked for CONNECT too, as llhttp checks it, though what follows is the tunnel.
  const declared = _framing(fields.fields);
  if ("error" in declared) return _bad(declared.error);
  const framing: Framing = method === "CONNECT" ? { kind: "tunnel" } : declared;
  return {
    ok: true,
    head: { method, target, version, fields: fields.fields, framing },
    size: lines.end,
  };
}

/**
 * Origin-form (`/…`), absolute-form (`scheme://…`) or `*`; for CONNECT any
 * target (the proxy then wants `host:port`).
 */
function _targetForm(method: string, target: string): boolean {
  if (method === "CONNECT") return true;
  return target === "*" || target.startsWith("/") || /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(target);
}

/** Field lines into name/value pairs, each checked. */
function _fields(lines: string[]): { fields: Array<[string, string]> } | { error: string } {
  const fields: Array<[string, string]> = [];
  for (const line of lines) {
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    if (!_TOKEN.test(name)) {
      return { error: `bad header line "${_shown(line.slice(0, 40))}"` };
    }
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, "");
    if (!_VALUE.test(value)) return { error: `a control character in header "${_shown(name)}"` };
    fields.push([name, value]);
  }
  return { fields };
}

/** The body's framing from the fields (a request's: no body unless one is declared). */
function _framing(fields: Array<[string, string]>): Framing | { error: string } {
  const lengths = fields.filter(([n]) => n.toLowerCase() === "content-length");
  const codings = fields.filter(([n]) => n.toLowerCase() === "transfer-encoding");
  if (lengths.length && codings.length) {
    return { error: "both Content-Length and Transfer-Encoding" };
  }
  if (codings.length) {
    // The codings of every Transfer-Encoding field, in order: chunked last, and only there.
    const list = codings.flatMap(([, v]) => v.split(",")).map((c) => c.trim().toLowerCase());
    if (list.some((c) => !_TOKEN.test(c))) return { error: "a bad Transfer-Encoding" };
    if (list.at(-1) !== "chunked" || list.indexOf("chunked") !== list.length - 1) {
      return { error: `Transfer-Encoding "${_shown(list.join(", "))}" does not end in chunked` };
    }
    return { kind: "chunked" };
  }
  if (lengths.length > 1) return { error: "Content-Length given twice" };
  if (lengths.length === 0) return { kind: "none" };
  const text = lengths[0][1];
  // Digits only, up to 2^64 - 1 as llhttp (beyond 2^53 a body that never ends in practice).
  if (!/^[0-9]+$/.test(text) || BigInt(text) > _MAX_U64) {
    return { error: `Content-Length "${_shown(text)}"` };
  }
  const length = Number(text);
  return length === 0 ? { kind: "none" } : { kind: "length", length };
}

/**
 * The CRLF-ended lines from `start` up to an empty one (not included):
 * a bare CR or LF is refused, as llhttp refuses it.
 */
function _lines(
  bytes: Uint8Array,
  start: number,
): { done: boolean; lines: string[]; end: number } | { error: string } {
  const lines: string[] = [];
  let from = start;
  for (let i = start; i < bytes.length; i++) {
    const b = bytes[i];
    if (b === 10) return { error: "a line ends in a bare LF" };
    if (b !== 13) continue;
    if (i + 1 >= bytes.length) break;
    if (bytes[i + 1] !== 10) return { error: "a bare CR" };
    if (i === from) return { done: true, lines, end: i + 2 };
    lines.push(_latin1(bytes.subarray(from, i)));
    from = i + 2;
    i++;
  }
  return { done: false, lines, end: from };
}

/** How many CR and LF bytes `bytes` starts with. */
function _leadingEmpty(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length && (bytes[i] === 13 || bytes[i] === 10)) i++;
  return i;
}

function _bad(error: string): { ok: false; error: string } {
  return { ok: false, error };
}

/** Text for an error message: printable ASCII, at most 60 characters. */
function _shown(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, "?").slice(0, 60);
}

/** Bytes as Latin-1 text (one character per byte). */
function _latin1(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode(...b.subarray(i, i + 8192));
  return s;
}

/** What one {@link BodyReader.feed} found. */
export interface BodyStep {
  /** Bytes of the input that belong to the body (framing included). */
  used: number;
  /** The body's own bytes in them (chunked framing removed). */
  data: Uint8Array[];
  /** The body has ended (what follows `used` is not the body's). */
  done: boolean;
  /** The body's framing is broken: the request is refused. */
  error?: string;
}

const _CHUNK_EXT =
  /^(;[!#$%&'*+\-.^_`|~0-9A-Za-z]+(=([!#$%&'*+\-.^_`|~0-9A-Za-z]+|"([\t\x20\x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t\x20-\x7e\x80-\xff])*"))?)*$/;
const _MAX_LINE = 64 * 1024;
const _MAX_U64 = 0xffffffffffffffffn;

/**
 * Reads a request body as it arrives, by its framing: where it ends, and
 * its bytes without the chunked framing; a broken chunked framing (a bad
 * size line, data longer than its size, bad trailers) is an error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { BodyReader } from "./http_request.ts";
 * const r = new BodyReader({ kind: "chunked" });
 * const bytes = new TextEncoder().encode("3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\nNEXT");
 * const step = r.feed(bytes);
 * assert.ok(step.done && !step.error);
 * assert.equal(step.used, bytes.length - 4);
 * assert.equal(new TextDecoder().decode(step.data[0]), "abc");
 * ```
 */
export class BodyReader {
  #state: "data" | "size" | "crlf" | "trailer" | "done" | "broken";
  #left = 0;
  #line: number[] = [];
  #chunked: boolean;

  constructor(framing: Framing) {
    this.#chunked = framing.kind === "chunked";
    if (framing.kind === "length") {
      this.#state = "data";
      this.#left = framing.length;
    } else this.#state = this.#chunked ? "size" : "done";
  }

  /** The body has ended. */
  get done(): boolean {
    return this.#state === "done";
  }

  /** It reads a line of the chunked framing (a size line, a chunk's CRLF, a trailer). */
  get inLine(): boolean {
    return this.#state === "size" || this.#state === "crlf" || this.#state === "trailer";
  }

  /** Read the next bytes from the client. */
  feed(bytes: Uint8Array): BodyStep {
    const step: BodyStep = { used: 0, data: [], done: false };
    let i = 0;
    while (i < bytes.length && this.#state !== "done" && this.#state !== "broken") {
      if (this.#state === "data") {
        const n = Math.min(this.#left, bytes.length - i);
        step.data.push(bytes.subarray(i, i + n));
        this.#left -= n;
        i += n;
        if (this.#left === 0) this.#state = this.#chunked ? "crlf" : "done";
        continue;
      }
      const error = this.#lineByte(bytes[i++]);
      if (error) {
        this.#state = "broken";
        step.error = error;
      }
    }
    step.used = i;
    step.done = this.#state === "done";
    return step;
  }

  /** One byte of a size line, of the CRLF after a chunk, or of a trailer line. */
  #lineByte(b: number): string | undefined {
    const line = this.#line;
    if (line.length && line.at(-1) === 13) {
      if (b !== 10) return "a bare CR in the chunked framing";
      line.pop();
      this.#line = [];
      return this.#endLine(_latin1(new Uint8Array(line)));
    }
    if (b === 10) return "a line of the chunked framing ends in a bare LF";
    line.push(b);
    if (line.length > _MAX_LINE) return "a line of the chunked framing is too long";
    if (this.#state === "crlf" && line.length > 1) return "chunk data longer than its size";
    return undefined;
  }

  #endLine(text: string): string | undefined {
    if (this.#state === "crlf") {
      if (text !== "") return "chunk data longer than its size";
      this.#state = "size";
    } else if (this.#state === "size") {
      const m = /^([0-9a-fA-F]+)(.*)$/.exec(text);
      if (!m || !_CHUNK_EXT.test(m[2])) return `bad chunk size line "${_shown(text)}"`;
      const size = BigInt("0x" + m[1]);
      if (size > _MAX_U64) return "chunk size too large";
      this.#left = Number(size);
      this.#state = this.#left === 0 ? "trailer" : "data";
    } else if (text !== "") {
      const bad = _fields([text]);
      if ("error" in bad) return `trailer: ${bad.error}`;
    } else this.#state = "done";
    return undefined;
  }
}
