/**
 * A request body's clock, on top of `node:http` (which has only a timeout
 * for the whole request, `requestTimeout`, counted from its first byte):
 * once a body is not whole `bodyMs` after its head, or averages fewer than
 * `minRate` bytes a second once `graceMs` have passed, the client gets 408
 * (or, when the answer has begun, a plain close) and the connection ends.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { PeerClock } from "../wire/mod.ts";
import { answerRaw } from "./_http_refusal.ts";

/** The rules of a body's clock (ms, bytes a second). */
export interface BodyTiming {
  bodyMs: number;
  minRate: number;
  graceMs: number;
}

/**
 * Time `req`'s body from now (its head has just arrived): `whole` hears
 * when it has arrived; the answer is a function that stops the clock.
 * Bytes are counted on the connection as they arrive (`bytesRead`), so a
 * handler that has not read the body yet does not make it late. The clock
 * counts only the time this process could run (core/wire/peer_clock.ts):
 * a tick that comes late after a stall judges nothing, so a body that
 * arrived during the stall is read first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createServer } from "node:http";
 * import { timeBody } from "./_body_clock.ts";
 * const server = createServer((req, res) => {
 *   timeBody(req, res, { bodyMs: 300, minRate: 0, graceMs: 300 }, () => res.end("whole"));
 * });
 * await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
 * const { port } = server.address() as { port: number };
 * const conn = await Deno.connect({ hostname: "127.0.0.1", port });
 * await conn.write(new TextEncoder().encode("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\n\r\nab"));
 * const buf = new Uint8Array(1024);
 * const text = new TextDecoder().decode(buf.subarray(0, (await conn.read(buf))!));
 * assert.match(text, /^HTTP\/1\.1 408 Request Timeout/);
 * assert.match(text, /--body-timeout/);
 * conn.close();
 * server.close();
 * ```
 */
export function timeBody(
  req: IncomingMessage,
  res: ServerResponse,
  t: BodyTiming,
  whole: () => void,
): () => void {
  const length = Number(req.headers["content-length"] ?? 0);
  if (req.complete || (!req.headers["transfer-encoding"] && !(length > 0))) {
    whole();
    return () => {};
  }
  const socket = req.socket as Socket;
  const every = Math.max(10, Math.min(250, t.graceMs, t.bodyMs));
  const clock = new PeerClock(every);
  const before = socket.bytesRead;
  const tick = setInterval(() => {
    if (req.complete) {
      clearInterval(tick);
      return whole();
    }
    if (!clock.tick()) return; // this process stalled: what arrived meanwhile is read first
    const elapsed = clock.elapsed();
    let why = "";
    if (elapsed >= t.bodyMs) {
      why = `no complete request body within ${t.bodyMs / 1000} s (--body-timeout)`;
    } else if (elapsed >= t.graceMs && socket.bytesRead - before < (t.minRate * elapsed) / 1000) {
      why = `the request body arrives slower than ${t.minRate} bytes a second (--min-body-rate)`;
    }
    if (!why) return;
    clearInterval(tick);
    if (res.headersSent) return void socket.destroy();
    answerRaw(socket, 408, `Request timeout: ${why}`);
  }, every);
  return () => clearInterval(tick);
}
