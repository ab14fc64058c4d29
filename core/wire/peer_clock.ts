/**
 * Timing a peer fairly: its deadlines count the time this process could
 * run, never a stall of the process itself. When the event loop is starved
 * (two cores, hundreds of sandboxes starting), a timer and the bytes the
 * peer sent meanwhile become ready in the same turn, and the timer may run
 * first: the peer would be refused for the server's own stall. A timer that
 * fires late gives the stall back once (at most the deadline again), so
 * what arrived is read first; a clock that ticks late does not count the
 * stall as the peer's time.
 *
 * @module
 */

/** A timer or tick this much later than asked means the process stalled (ms). */
export const STALL_MS = 200;

/**
 * Call `expired` once `ms` of this process's running time have passed, unless
 * stopped first. A timer that fires more than {@link STALL_MS} late re-arms
 * for the time it was late (in all at most `ms` more), so a peer whose data
 * arrived during the stall is served.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { peerDeadline } from "./peer_clock.ts";
 * let fired = false;
 * const d = peerDeadline(5, () => fired = true);
 * await new Promise((r) => setTimeout(r, 50));
 * d.stop();
 * assert.ok(fired);
 * ```
 */
export function peerDeadline(ms: number, expired: () => void): { stop(): void } {
  let due = performance.now() + ms;
  let credit = ms;
  const check = () => {
    const late = performance.now() - due;
    if (late > STALL_MS && credit > 0) {
      const again = Math.min(late, credit);
      credit -= again;
      due = performance.now() + again;
      timer = setTimeout(check, again);
      return;
    }
    expired();
  };
  let timer = setTimeout(check, ms);
  return { stop: () => clearTimeout(timer) };
}

/**
 * The running time of a clock that ticks every `intervalMs`: call
 * {@link PeerClock.tick} at each tick; a tick that comes more than
 * {@link STALL_MS} late is a stall of this process, not counted, and
 * `tick()` says to judge nothing on it (what the peer sent meanwhile is
 * read first).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { PeerClock } from "./peer_clock.ts";
 * const clock = new PeerClock(10);
 * const t0 = performance.now();
 * while (performance.now() - t0 < 400) Math.random(); // the event loop stalls
 * assert.equal(clock.tick(), false); // late: nothing is judged on this tick
 * assert.ok(clock.elapsed() < 400);
 * ```
 */
export class PeerClock {
  readonly #start = performance.now();
  #last = this.#start;
  #stalled = 0;
  readonly #interval: number;

  constructor(intervalMs: number) {
    this.#interval = intervalMs;
  }

  /** Note a tick; false when it came late (the process stalled since the last one). */
  tick(): boolean {
    const now = performance.now();
    const gap = now - this.#last;
    this.#last = now;
    if (gap <= this.#interval + STALL_MS) return true;
    this.#stalled += gap - this.#interval;
    return false;
  }

  /** Milliseconds since the start, stalls taken out. */
  elapsed(): number {
    return performance.now() - this.#start - this.#stalled;
  }
}
