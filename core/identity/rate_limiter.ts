/**
 * Calls per minute per identity: a token bucket per key that holds at most
 * `perMinute` calls and refills evenly over the minute. A refusal carries
 * how many seconds to wait (HTTP `Retry-After`).
 *
 * @module
 */

/** The answer of {@link RateLimiter.take}. */
export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number };

interface _Bucket {
  tokens: number;
  /** `now` of the last refill, in ms. */
  at: number;
}

/** Token buckets, one per key (an identity name). */
export class RateLimiter {
  #buckets = new Map<string, _Bucket>();
  #maxKeys: number;

  /** At most `maxKeys` buckets are kept; full ones are dropped first (they hold nothing). */
  constructor(maxKeys = 10_000) {
    this.#maxKeys = maxKeys;
  }

  /**
   * Take one call from `key`'s bucket of `perMinute`. `now` is in ms
   * (default `performance.now()`).
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RateLimiter } from "./rate_limiter.ts";
   * const r = new RateLimiter();
   * assert.deepEqual(r.take("alice", 2, 0), { ok: true });
   * assert.deepEqual(r.take("alice", 2, 0), { ok: true });
   * assert.deepEqual(r.take("alice", 2, 0), { ok: false, retryAfterSeconds: 30 });
   * assert.deepEqual(r.take("alice", 2, 30_000), { ok: true });
   * ```
   */
  take(key: string, perMinute: number, now: number = performance.now()): RateDecision {
    const rate = perMinute / 60_000; // calls per ms
    let b = this.#buckets.get(key);
    if (!b) {
      if (this.#buckets.size >= this.#maxKeys) this.#prune(now, rate);
      b = { tokens: perMinute, at: now };
      this.#buckets.set(key, b);
    }
    b.tokens = Math.min(perMinute, b.tokens + Math.max(0, now - b.at) * rate);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - b.tokens) / rate / 1000)) };
  }

  /** How many keys have a bucket. */
  get size(): number {
    return this.#buckets.size;
  }

  #prune(now: number, rate: number): void {
    // A bucket that has refilled (at this rate or faster) holds no state worth keeping.
    for (const [k, b] of this.#buckets) {
      if (b.tokens + (now - b.at) * rate >= 60_000 * rate) this.#buckets.delete(k);
    }
    // Still full of busy keys: drop the oldest (a dropped key starts again with a full bucket).
    while (this.#buckets.size >= this.#maxKeys) {
      this.#buckets.delete(this.#buckets.keys().next().value!);
    }
  }
}
