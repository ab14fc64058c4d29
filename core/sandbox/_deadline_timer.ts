/**
 * One timer for many deadlines: set for the earliest, instead of a timer
 * per call, so that thousands of concurrent calls stay cheap
 * (./sandbox.ts).
 *
 * @module
 */

/** Something with a deadline (`performance.now()` time) and what to do when it passes. */
export interface Deadline {
  deadline?: number;
  onTimeout?: () => void;
  /**
   * A limit (ms) that runs from the sandbox's start rather than from the
   * request (a module's import: the process's own start is not its time):
   * the deadline is set again by {@link DeadlineTimer.started}.
   */
  afterStart?: number;
}

/**
 * A timer over the deadlines `items()` gives at each firing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DeadlineTimer } from "./_deadline_timer.ts";
 * let fired = 0;
 * const items = [{ deadline: performance.now() + 5, onTimeout: () => fired++ }];
 * const t = new DeadlineTimer(() => items);
 * t.schedule(5);
 * await new Promise((r) => setTimeout(r, 30));
 * assert.equal(fired, 1);
 * t.stop();
 * ```
 */
export class DeadlineTimer {
  readonly #items: () => Iterable<Deadline>;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #at = Infinity;

  constructor(items: () => Iterable<Deadline>) {
    this.#items = items;
  }

  /** Fire in `inMs` at the latest (an earlier timer stays). */
  schedule(inMs: number): void {
    const at = performance.now() + inMs;
    if (this.#timer !== undefined && this.#at <= at) return;
    clearTimeout(this.#timer);
    this.#at = at;
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, inMs));
  }

  /** The sandbox has started: limits that run from its start run from now. */
  started(): void {
    const now = performance.now();
    for (const p of this.#items()) {
      if (p.afterStart === undefined) continue;
      p.deadline = now + p.afterStart;
      p.afterStart = undefined;
      this.schedule(p.deadline - now);
    }
  }

  /** No deadline is left: stop. */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Infinity;
  }

  #expire(): void {
    this.#timer = undefined;
    this.#at = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const p of [...this.#items()]) {
      if (p.deadline === undefined) continue;
      if (p.deadline <= now + 1) p.onTimeout?.();
      else next = Math.min(next, p.deadline);
    }
    if (next !== Infinity) this.schedule(next - now);
  }
}
