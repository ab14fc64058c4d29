/**
 * How many tool calls run at once in one corral instance, and how many may
 * wait: every MCP session (and every stateless request) of an instance
 * shares one gate. A call waits for a slot in a bounded queue; beyond the
 * queue it is refused at once (HTTP 429 with `Retry-After` in stateless
 * mode, a tool error in a session).
 *
 * @module
 */

/** Default slots: calls running at once in an instance. */
export const DEFAULT_MAX_CONCURRENT = 8;
/** Default queue: calls waiting for a slot. */
export const DEFAULT_MAX_QUEUE = 256;

/**
 * A counting gate with a bounded queue, in arrival order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CallGate } from "./call_gate.ts";
 * const gate = new CallGate(1, 1);
 * const first = await gate.acquire();
 * const second = gate.acquire(); // waits
 * assert.ok(gate.full && (await gate.acquire()) === undefined);
 * first!();
 * (await second)!();
 * assert.ok(gate.running === 0);
 * ```
 */
export class CallGate {
  /** Calls running now. */
  running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(readonly slots: number, readonly queue: number) {}

  /** Calls waiting now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** No slot and no room in the queue: a new call would be refused. */
  get full(): boolean {
    return this.running >= this.slots && this.#waiting.length >= this.queue;
  }

  /**
   * A slot: resolves to its release function, or to undefined when the
   * gate is full (or `signal` aborts while waiting).
   */
  acquire(signal?: AbortSignal): Promise<(() => void) | undefined> {
    if (this.running < this.slots && this.#waiting.length === 0) {
      return Promise.resolve(this.#take());
    }
    if (this.#waiting.length >= this.queue || signal?.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const wake = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve(this.#take());
      };
      const onAbort = () => {
        const i = this.#waiting.indexOf(wake);
        if (i >= 0) this.#waiting.splice(i, 1);
        resolve(undefined);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(wake);
    });
  }

  #take(): () => void {
    this.running++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.running--;
      const next = this.#waiting.shift();
      if (next) next();
    };
  }
}
