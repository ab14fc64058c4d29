/**
 * Calls at once per identity: a counter per key; beyond the limit a call
 * is refused at once (the caller answers 429), never queued.
 *
 * @module
 */

/** Counts running calls per key. */
export class ConcurrencyLimiter {
  #running = new Map<string, number>();

  /**
   * Start a call of `key` when fewer than `max` run: returns its release
   * (idempotent), or null when `key` is at its limit.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ConcurrencyLimiter } from "./_concurrency_limiter.ts";
   * const c = new ConcurrencyLimiter();
   * const a = c.tryAcquire("alice", 1)!;
   * assert.equal(c.tryAcquire("alice", 1), null);
   * a(); a();
   * assert.equal(c.running("alice"), 0);
   * assert.ok(c.tryAcquire("alice", 1));
   * ```
   */
  tryAcquire(key: string, max: number): (() => void) | null {
    const n = this.#running.get(key) ?? 0;
    if (n >= max) return null;
    this.#running.set(key, n + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.#running.get(key) ?? 1) - 1;
      if (left > 0) this.#running.set(key, left);
      else this.#running.delete(key);
    };
  }

  /** Calls of `key` running now. */
  running(key: string): number {
    return this.#running.get(key) ?? 0;
  }
}
