/**
 * Failed authentication made visible without letting it flood anything: each
 * request refused with 401 (no valid token) or 403 (an identity not
 * admitted) is counted in the metrics (`corral_auth_failures_total`), and
 * logged per client address: the first of a window at once, the rest as
 * one line with their count when the window ends (on stderr and, with an
 * audit log, as `kind: "auth"` lines). No token, nor any part of one, is
 * ever written; the reason is corral's own words.
 *
 * @module
 */
import { RefusalTally } from "../audit/mod.ts";
import type { CorralMetrics } from "../telemetry/mod.ts";

/** A line of the audit log about failed authentication from one address. */
export interface AuditAuthRecord {
  time: string;
  kind: "auth";
  /** The client address (as the front saw it). */
  source: string;
  /** The first failure of a window: its status and reason. */
  status?: number;
  reason?: string;
  /** A window's summary: failures after the first, by status. */
  count?: number;
  statuses?: Record<string, number>;
  since?: string;
}

/** Where {@link AuthFailures} reports. */
export interface AuthFailuresOptions {
  /** Counts them (`corral_auth_failures_total`). */
  metrics?: CorralMetrics;
  /** An operator's log line (default stderr). */
  log?: (line: string) => void;
  /** An audit line (none: not audited). */
  audit?: (record: AuditAuthRecord) => void;
  /** Length of a window (default 60 s). */
  windowMs?: number;
}

/** Counts and logs failed authentication per client address. */
export class AuthFailures {
  readonly #o: AuthFailuresOptions;
  readonly #tally: RefusalTally;
  #timer?: ReturnType<typeof setTimeout>;

  constructor(options: AuthFailuresOptions = {}) {
    this.#o = options;
    this.#tally = new RefusalTally(options.windowMs);
  }

  /**
   * One request from `source` refused with `status` (401 or 403) for
   * `reason` (corral's message to the client: it holds no token).
   */
  record(source: string, status: number, reason: string): void {
    this.#o.metrics?.authFailure(status);
    const now = performance.now();
    this.#report(this.#tally.due(now));
    if (this.#tally.admit(source, "auth", String(status), now)) {
      this.#line(`corral: authentication failed from ${source}: ${status} ${reason}`);
      this.#o.audit?.({
        time: new Date().toISOString(),
        kind: "auth",
        source,
        status,
        reason,
      });
    }
    this.#schedule(now);
  }

  /** Report every window now (the server closes). */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#report(this.#tally.due(performance.now(), true));
  }

  #report(due: ReturnType<RefusalTally["due"]>): void {
    for (const w of due) {
      const by = Object.entries(w.tools).map(([s, n]) => `${s}: ${n}`).join(", ");
      this.#line(
        `corral: ${w.count} more failed authentications from ${w.identity} since ${w.since} ` +
          `(${by})`,
      );
      this.#o.audit?.({
        time: w.time,
        kind: "auth",
        source: w.identity,
        count: w.count,
        statuses: w.tools,
        since: w.since,
      });
    }
  }

  #line(text: string): void {
    (this.#o.log ?? ((t: string) => console.error(t)))(text);
  }

  #schedule(now: number): void {
    const next = this.#tally.nextDue;
    if (this.#timer !== undefined || next === undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const at = performance.now();
      this.#report(this.#tally.due(at));
      this.#schedule(at);
    }, Math.max(0, next - now) + 5);
    Deno.unrefTimer(this.#timer);
  }
}
