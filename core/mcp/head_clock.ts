/**
 * A connection's head deadline, in place of `node:http`'s `headersTimeout`:
 * a request head must be whole within `headMs` of the connection's start,
 * and of the first byte of each next request on a kept-alive connection.
 * It counts only the time this process could run (core/guard/peer_clock.ts):
 * `node:http` checks its deadline on a timer that, after a stall of the
 * event loop (two cores, hundreds of sandboxes starting), runs before the
 * head that arrived meanwhile is read, and answers a client 408 for the
 * server's own stall. Here a late timer first lets what arrived be read.
 *
 * @module
 */
import type { Socket } from "node:net";
import { peerDeadline } from "../guard/peer_clock.ts";

/**
 * The head deadline of one connection: armed at once, stopped by
 * {@link HeadClock.got} (a whole head), waiting again after
 * {@link HeadClock.next} (a response ended, the connection kept): then
 * armed once the next request's first bytes are read, which it watches on
 * the socket's byte count (`node:http` reads the socket itself: no `data`
 * event reaches another listener). An idle kept-alive connection is
 * `node:http`'s to close (`keepAliveTimeout`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createServer } from "node:http";
 * import { HeadClock } from "./head_clock.ts";
 * let expired = 0;
 * const server = createServer({ headersTimeout: 0, requestTimeout: 0 });
 * server.on("connection", (s) => new HeadClock(s, 100, () => (expired++, s.destroy())));
 * await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
 * const { port } = server.address() as { port: number };
 * const conn = await Deno.connect({ hostname: "127.0.0.1", port });
 * await conn.write(new TextEncoder().encode("GET / HTTP/1.1\r\n")); // never whole
 * assert.equal(await conn.read(new Uint8Array(16)), null); // closed at its deadline
 * assert.equal(expired, 1);
 * conn.close();
 * server.close();
 * ```
 */
export class HeadClock {
  readonly #socket: Socket;
  readonly #ms: number;
  readonly #expired: () => void;
  #timer: { stop(): void } | undefined;
  #watch: ReturnType<typeof setInterval> | undefined;
  #waiting = true;

  constructor(socket: Socket, headMs: number, expired: () => void) {
    this.#socket = socket;
    this.#ms = headMs;
    this.#expired = expired;
    this.#arm();
    socket.once("close", () => this.#stop());
  }

  /** A whole head arrived: no deadline until the next request. */
  got(): void {
    this.#waiting = false;
    this.#stop();
  }

  /**
   * The response ended and the connection stays: the next head's time starts when its first
   * bytes are read (bytes of it that came before, pipelined, wait at most `keepAliveTimeout`
   * for more).
   */
  next(): void {
    this.#waiting = true;
    this.#stop();
    const read = this.#socket.bytesRead;
    this.#watch = setInterval(() => {
      if (this.#socket.bytesRead === read) return;
      clearInterval(this.#watch);
      this.#watch = undefined;
      this.#arm();
    }, Math.max(10, Math.min(250, this.#ms / 4)));
  }

  #arm(): void {
    this.#timer = peerDeadline(this.#ms, () => {
      this.#timer = undefined;
      if (this.#waiting) this.#expired();
    });
  }

  #stop(): void {
    this.#timer?.stop();
    this.#timer = undefined;
    clearInterval(this.#watch);
    this.#watch = undefined;
  }
}
