/**
 * Calls per minute per identity: a token bucket per key that holds at most
 * `perMinute` calls and refills evenly over the minute. A refusal carries
 * how many seconds to wait (HTTP `Retry-After`). Every call counts: a
 * request holding several (a JSON-RPC batch) takes one per call
 * ({@link RateLimiter.takeUpTo}). This bucket is the replica's own; with
 * `--shared-state` the same bucket lives in Redis (./redis_state.ts).
 *
 * @module
 */

/** The answer of {@link RateLimiter.take}. */
export type RateDecision = { ok: true } | { ok: false; retryAfterSeconds: number };

/** The answer of {@link RateLimiter.takeUpTo}: how many calls may run, and when to retry the rest. */
export interface RateGrant {
  /** Calls granted (0 to the number asked). */
  granted: number;
  /** Seconds until one more call would be granted (at least 1). */
  retryAfterSeconds: number;
}

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
   * import { RateLimiter } from "./_rate_limiter.ts";
   * const r = new RateLimiter();
   * assert.deepEqual(r.take("alice", 2, 0), { ok: true });
   * assert.deepEqual(r.take("alice", 2, 0), { ok: true });
   * assert.deepEqual(r.take("alice", 2, 0), { ok: false, retryAfterSeconds: 30 });
   * assert.deepEqual(r.take("alice", 2, 30_000), { ok: true });
   * ```
   */
  take(key: string, perMinute: number, now: number = performance.now()): RateDecision {
    const g = this.takeUpTo(key, perMinute, 1, now);
    return g.granted ? { ok: true } : { ok: false, retryAfterSeconds: g.retryAfterSeconds };
  }

  /**
   * Take up to `n` calls from `key`'s bucket of `perMinute`: as many as it
   * holds, and the seconds until the next one refills.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { RateLimiter } from "./_rate_limiter.ts";
   * const r = new RateLimiter();
   * assert.equal(r.takeUpTo("alice", 3, 30, 0).granted, 3); // a batch of 30 under 3 a minute
   * assert.equal(r.takeUpTo("alice", 3, 30, 0).granted, 0);
   * ```
   */
  takeUpTo(key: string, perMinute: number, n: number, now: number = performance.now()): RateGrant {
    const rate = perMinute / 60_000; // calls per ms
    let b = this.#buckets.get(key);
    if (!b) {
      if (this.#buckets.size >= this.#maxKeys) this.#prune(now, rate);
      b = { tokens: perMinute, at: now };
      this.#buckets.set(key, b);
    }
    b.tokens = Math.min(perMinute, b.tokens + Math.max(0, now - b.at) * rate);
    b.at = now;
    const granted = Math.max(0, Math.min(n, Math.floor(b.tokens)));
    b.tokens -= granted;
    return {
      granted,
      retryAfterSeconds: Math.max(1, Math.ceil(Math.max(0, 1 - b.tokens) / rate / 1000)),
    };
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
