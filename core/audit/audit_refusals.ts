/**
 * Refusals in the audit log, counted instead of written one by one: a
 * caller refused a thousand times a second (its rate limit, a full queue,
 * unknown tools, bad arguments) must not fill the disk. Per identity and
 * reason, the first refusal of a window is written in full; the others of
 * that window are counted and written as one line when the window ends
 * (`kind: "refusals"`, with the count and the count per tool). The number
 * of identity and reason pairs tracked at once is bounded too: beyond it,
 * refusals are counted under the identity `(others)`.
 *
 * @module
 */

/** Default length of a window: one summary line per identity and reason per minute at most. */
export const DEFAULT_REFUSAL_WINDOW_MS = 60_000;

/** Pairs of identity and reason tracked in one window, at most. */
const _MAX_KEYS = 1000;
/** Tools named in one summary line, at most (the rest counted under `(other tools)`). */
const _MAX_TOOLS = 20;

/** The line that sums up one window's counted refusals of one identity and reason. */
export interface AuditRefusalsRecord {
  /** When the window ended (ISO). */
  time: string;
  kind: "refusals";
  identity: string;
  reason: string;
  outcome: "denied";
  /** Refusals counted in the window (beyond the first, written in full). */
  count: number;
  /** When the window began (ISO). */
  since: string;
  /** The count per tool name (capped names; at most 20, the rest under `(other tools)`). */
  tools: Record<string, number>;
}

interface _Window {
  identity: string;
  reason: string;
  since: number;
  count: number;
  tools: Map<string, number>;
}

/**
 * Counts refusals per identity and reason in windows of `windowMs`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RefusalTally } from "./audit_refusals.ts";
 * const tally = new RefusalTally(1000);
 * assert.equal(tally.admit("alice", "rate_limit", "ReadFile", 0), true); // written in full
 * assert.equal(tally.admit("alice", "rate_limit", "ReadFile", 10), false); // counted
 * assert.equal(tally.admit("bob", "rate_limit", "ReadFile", 20), true);
 * const [line] = tally.due(1000);
 * assert.equal(line.count, 1);
 * assert.deepEqual(line.tools, { ReadFile: 1 });
 * assert.equal(tally.admit("alice", "rate_limit", "ReadFile", 1001), true); // a new window
 * ```
 */
export class RefusalTally {
  readonly #windowMs: number;
  readonly #windows = new Map<string, _Window>();
  readonly #ended: _Window[] = [];
  /** No window ends before this (a refusal does not scan every window). */
  #earliest = Infinity;

  constructor(windowMs: number = DEFAULT_REFUSAL_WINDOW_MS) {
    this.#windowMs = windowMs;
  }

  /** The end of the earliest open window (ms, on the clock `admit` was given), or undefined. */
  get nextDue(): number | undefined {
    let next: number | undefined;
    for (const w of this.#windows.values()) {
      const end = w.since + this.#windowMs;
      if (next === undefined || end < next) next = end;
    }
    return next;
  }

  /**
   * One refusal of `identity` for `reason` (a call of `tool`) at `now`
   * (ms): true when it opens a window (write its line in full), false when
   * it is counted into the window's summary.
   */
  admit(identity: string, reason: string, tool: string, now: number): boolean {
    let key = `${identity}\0${reason}`;
    if (!this.#windows.has(key) && this.#windows.size >= _MAX_KEYS) {
      identity = "(others)";
      key = `${identity}\0${reason}`;
    }
    const w = this.#windows.get(key);
    if (w && now - w.since < this.#windowMs) return this.#count(w, tool);
    if (w) this.#ended.push(w); // ended, not yet taken by `due`
    this.#windows.set(key, { identity, reason, since: now, count: 0, tools: new Map() });
    this.#earliest = Math.min(this.#earliest, now + this.#windowMs);
    return true;
  }

  /** The summary lines of every window that ended by `now` (all of them with `all`). */
  due(now: number, all = false): AuditRefusalsRecord[] {
    if (!all && !this.#ended.length && now < this.#earliest) return [];
    const ended = this.#ended.splice(0);
    this.#earliest = Infinity;
    for (const [key, w] of this.#windows) {
      const end = w.since + this.#windowMs;
      if (!all && end > now) {
        this.#earliest = Math.min(this.#earliest, end);
        continue;
      }
      this.#windows.delete(key);
      ended.push(w);
    }
    const out: AuditRefusalsRecord[] = [];
    for (const w of ended) {
      const end = w.since + this.#windowMs;
      if (w.count === 0) continue;
      out.push({
        time: new Date(_wall(Math.min(end, now))).toISOString(),
        kind: "refusals",
        identity: w.identity,
        reason: w.reason,
        outcome: "denied",
        count: w.count,
        since: new Date(_wall(w.since)).toISOString(),
        tools: Object.fromEntries(w.tools),
      });
    }
    return out;
  }

  #count(w: _Window, tool: string): false {
    w.count++;
    const name = w.tools.has(tool) || w.tools.size < _MAX_TOOLS ? tool : "(other tools)";
    w.tools.set(name, (w.tools.get(name) ?? 0) + 1);
    return false;
  }
}

/** Wall-clock ms for a `performance.now()` reading (the tally's clock in use). */
function _wall(perf: number): number {
  return performance.timeOrigin + perf;
}
