/**
 * How much a hosted server may say besides its answers, in bytes: its
 * stderr and its log notifications (`notifications/message`), each bounded
 * per second (a burst, then a steady rate) and per session (the server's
 * instance of one principal, across its restarts). What is over is dropped
 * (./_stdio_channel.ts audits it, one line a second with the count).
 *
 * @module
 */

/** Bytes of stderr, and of log notifications, a server may send at once. */
export const OUTPUT_BURST_BYTES = 256 * 1024;
/** ... then per second. */
export const OUTPUT_BYTES_PER_SECOND = 64 * 1024;
/** ... and in all, per session. */
export const OUTPUT_BYTES_PER_SESSION = 8 * 1024 * 1024;

/** The limits of one {@link OutputBudget}. */
export interface OutputLimits {
  burst: number;
  perSecond: number;
  perSession: number;
}

/** The default limits (these constants). */
export const OUTPUT_LIMITS: OutputLimits = {
  burst: OUTPUT_BURST_BYTES,
  perSecond: OUTPUT_BYTES_PER_SECOND,
  perSession: OUTPUT_BYTES_PER_SESSION,
};

/**
 * A byte budget: a bucket of `burst` bytes refilled at `perSecond`, and at
 * most `perSession` bytes in all. Whatever one {@link OutputBudget.take}
 * asks is taken whole or not at all.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { OutputBudget } from "./_output_budget.ts";
 * const b = new OutputBudget({ burst: 10, perSecond: 0, perSession: 15 });
 * assert.equal(b.take(8), true);
 * assert.equal(b.take(8), false); // over the burst: dropped
 * assert.equal(b.take(2), true);
 * assert.equal(b.dropped, 8);
 * ```
 */
export class OutputBudget {
  readonly limits: OutputLimits;
  #tokens: number;
  #refill = performance.now();
  #spent = 0;
  /** Bytes dropped so far. */
  dropped = 0;

  constructor(limits: OutputLimits = OUTPUT_LIMITS) {
    this.limits = limits;
    this.#tokens = limits.burst;
  }

  /** Bytes sent so far. */
  get spent(): number {
    return this.#spent;
  }

  /** Whether the session's whole budget is spent. */
  get exhausted(): boolean {
    return this.#spent >= this.limits.perSession;
  }

  /** Take `bytes` if both bounds allow them; else count them dropped. */
  take(bytes: number): boolean {
    const now = performance.now();
    const l = this.limits;
    this.#tokens = Math.min(l.burst, this.#tokens + (now - this.#refill) * l.perSecond / 1000);
    this.#refill = now;
    if (bytes > this.#tokens || this.#spent + bytes > l.perSession) {
      this.dropped += bytes;
      return false;
    }
    this.#tokens -= bytes;
    this.#spent += bytes;
    return true;
  }
}
