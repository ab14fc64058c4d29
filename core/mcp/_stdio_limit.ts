/**
 * A size limit for MCP messages on stdio. The SDK's stdio transport closes
 * itself (and so the server) on a message over 10 MiB; corral reads stdin
 * itself, passes complete lines under the limit through, and answers an
 * oversized one with a JSON-RPC error (`-32600`, naming its size and the
 * limit), then keeps serving. It reads stdin without node's streams: a pipe
 * or socket through node:net's handle, else `Deno.stdin` (node's
 * `process.stdin` stream cost ≈ 25 µs more per message; bench/analysis.md,
 * Goal 9b).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import process from "node:process";
import { EventEmitter } from "node:events";
import { closeSync, fstatSync, openSync } from "node:fs";
import { Socket } from "node:net";

const _indexOf = Uint8Array.prototype.indexOf;

/**
 * A stream of the complete lines of `input` that are at most `maxBytes`
 * long; for every longer one, `onOversized(idText, bytes)` is called with
 * the JSON of its `id` when its first KiB shows one (else `null`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Buffer } from "node:buffer";
 * import { PassThrough } from "node:stream";
 * import { limitLines } from "./_stdio_limit.ts";
 * const input = new PassThrough();
 * const seen: string[] = [];
 * const out = limitLines(input as unknown as NodeJS.ReadableStream, 10, (id) => seen.push(`too big ${id}`));
 * const got: string[] = [];
 * out.on("data", (c: Buffer) => got.push(c.toString()));
 * input.write('{"id":7,"x":"0123456789"}\n{"id":8}\n');
 * await new Promise((r) => setTimeout(r, 10));
 * assert.ok(seen[0] === "too big 7" && got.join("") === '{"id":8}\n');
 * ```
 */
export function limitLines(
  input: NodeJS.ReadableStream,
  maxBytes: number,
  onOversized: (id: string | null, bytes: number) => void,
): LineStream {
  const out = new LineStream();
  // The start of a line that goes on in a later chunk (never more than maxBytes in all).
  let parts: Buffer[] = [];
  let size = 0;
  let head = ""; // the first KiB of an oversized line (for its id)
  let dropping = false;
  const feed = (chunk: Buffer) => {
    let at = 0;
    while (at < chunk.length) {
      // The typed array's own search: Buffer's indexOf goes through node's layer (≈ 2 µs a call).
      const nl = _indexOf.call(chunk, 10, at);
      const end = nl < 0 ? chunk.length : nl;
      const piece = chunk.subarray(at, end);
      size += piece.length;
      if (!dropping && size > maxBytes) {
        dropping = true;
        head = Buffer.concat([...parts, piece.subarray(0, 1024)]).subarray(0, 1024).toString();
        parts = [];
      } else if (!dropping && nl < 0) parts.push(piece);
      if (nl < 0) break;
      if (dropping) {
        const id = /"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)/.exec(head)?.[1] ?? null;
        onOversized(id, size);
      } else if (parts.length === 0) {
        // The whole line is in this chunk: passed on as it is, newline included, not copied.
        out.push(chunk.subarray(at, nl + 1));
      } else {
        parts.push(chunk.subarray(at, nl + 1));
        out.push(Buffer.concat(parts));
      }
      parts = [];
      size = 0;
      head = "";
      dropping = false;
      at = nl + 1;
    }
  };
  input.on("data", (c: Buffer | string) => feed(typeof c === "string" ? Buffer.from(c) : c));
  input.on("end", () => out.emit("end"));
  input.on("error", (e) => out.emit("error", e));
  return out;
}

/**
 * Complete lines, each a `data` event, then `end`: what the SDK's stdio
 * transport reads (it listens for `data` and `error`, and pauses its input
 * when it closes: here there is nothing to pause, the lines just stop).
 */
export class LineStream extends EventEmitter {
  /** Lines that came before anyone listened (copies), handed to the first listener. */
  #early: Buffer[] = [];

  constructor() {
    super();
    this.on("newListener", (event: string) => {
      if (event === "data" && this.#early.length) queueMicrotask(() => this.#flush());
    });
  }

  /** One complete line (a view, read at once by the listener; kept as a copy when none). */
  push(line: Buffer): void {
    if (this.#early.length || this.listenerCount("data") === 0) {
      this.#early.push(Buffer.from(line));
      this.#flush();
    } else this.emit("data", line);
  }

  /** Nothing waits here to be read: pausing has nothing to hold back. */
  pause(): this {
    return this;
  }

  #flush(): void {
    while (this.#early.length && this.listenerCount("data") > 0) {
      this.emit("data", this.#early.shift()!);
    }
  }
}

/** stdin, limited; oversized requests get their error on stdout. */
export function limitedStdin(maxBytes: number): LineStream {
  return limitLines(_stdin(), maxBytes, (id, bytes) => {
    process.stdout.write(
      JSON.stringify({
        jsonrpc: "2.0",
        id: id === null ? null : JSON.parse(id),
        error: {
          code: -32600,
          message: `Request too large: ${bytes} bytes, limit ${maxBytes} (--max-body); ignored`,
        },
      }) + "\n",
    );
  });
}

/**
 * stdin as the events {@link limitLines} reads: `data`, then `end` (also
 * after a read error, reported first as `error`). A pipe or a socket is read
 * by node:net on the event loop's own poller (a read when it is readable);
 * anything else (a file, /dev/null, a TTY) by `Deno.stdin.read`, which
 * reads on a blocking thread: for each read a dup of fd 0, a thread woken
 * and a close, ≈ 60 µs more per hosted call on a busy machine (bench/analysis.md, Goal 9b).
 */
function _stdin(): NodeJS.ReadableStream {
  return _isPipe(0) ? _pipeStdin() : _denoStdin();
}

/** Whether `fd` is a pipe or a socket (what node:net reads); false when unknown. */
function _isPipe(fd: number): boolean {
  try {
    const stat = fstatSync(fd);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return false;
  }
}

/**
 * A pipe or socket on fd 0 read through node:net (non-blocking, as node
 * reads its own stdin). node:net closes fd 0 when it is done; /dev/null is
 * put back in its place, so fd 0 is never free for an unrelated file.
 */
function _pipeStdin(): NodeJS.ReadableStream {
  const events = new EventEmitter();
  const socket = new Socket({ fd: 0, readable: true, writable: false });
  socket.on("data", (chunk: Buffer) => events.emit("data", chunk));
  socket.on("error", (err: Error) => events.emit("error", err));
  // After the end of input or a read error node:net closes the socket, and fd 0 with it.
  socket.on("close", () => {
    _refillStdin();
    events.emit("end");
  });
  return events as unknown as NodeJS.ReadableStream;
}

/** /dev/null on fd 0 when it was closed (another fd it got is closed again). */
function _refillStdin(): void {
  try {
    const fd = openSync("/dev/null", "r");
    if (fd !== 0) closeSync(fd);
  } catch { /* fd 0 stays closed: nothing reads it any more */ }
}

/** `Deno.stdin` read into one buffer, each read passed on as a copy. */
function _denoStdin(): NodeJS.ReadableStream {
  const events = new EventEmitter();
  const buf = new Uint8Array(64 * 1024);
  (async () => {
    try {
      for (let n = await Deno.stdin.read(buf); n !== null; n = await Deno.stdin.read(buf)) {
        // A native copy, then a Buffer view of it: Buffer.from(a Uint8Array) copies in node's layer.
        const copy = buf.slice(0, n);
        events.emit("data", Buffer.from(copy.buffer, 0, n));
      }
    } catch (err) {
      events.emit("error", err);
    }
    events.emit("end");
  })();
  return events as unknown as NodeJS.ReadableStream;
}
