/**
 * Whose are the last changes of a sandbox that ended under its calls?
 * Theirs. A sandbox run (a process sandbox's child, a hosted server's
 * process) settles what it wrote last when it ends (core/layers/); a call
 * that was running when it ended (killed on a timeout, crashed, stopped
 * with its session) takes that settlement as its own change list, on its
 * own audit line. Only what no call was running for (written between
 * calls) is reported apart.
 *
 * @module
 */
import {
  type ChangeReport,
  emptyReport,
  type HoldRequest,
  type HoldSet,
  isEmptyReport,
} from "../layers/mod.ts";

/** What settles a call's writes: a sandbox's layers, or the last settlement of a run it outlived. */
export interface Settles {
  settle(): Promise<ChangeReport>;
  /** What the live sandbox's view could not refresh (core/layers/view_refresh.ts), if anything. */
  readonly view?: { readonly note: string | undefined };
  /** Which settlements hold their changes for review (core/layers/hold_state.ts). */
  readonly holds?: HoldSet;
}

/**
 * One run of a sandbox: the calls on it, and its last settlement.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { LastChanges } from "./last_changes.ts";
 * import { emptyReport } from "../layers/mod.ts";
 * const apart: number[] = [];
 * let end = () => {};
 * const ended = new Promise<void>((r) => end = r);
 * const run = new LastChanges((r) => apart.push(r.created), () => ended);
 * run.layers = { settle: () => Promise.resolve(emptyReport()) }; // its write layers
 * run.enter(); // a call starts on it
 * run.ended({ ...emptyReport(), created: 2 }); // killed under the call: settled once more
 * end();
 * const report = await run.settles(false)!.settle();
 * assert.equal(report.created, 2); // the call's own
 * run.leave();
 * assert.deepEqual(apart, []); // nothing reported apart
 * ```
 */
export class LastChanges {
  /** The run's write layers, once it has them. */
  layers: Settles | undefined;
  readonly #apart: (report: ChangeReport) => void;
  readonly #finished: () => Promise<unknown> | undefined;
  #calls = 0;
  #last: ChangeReport | undefined;

  /**
   * `apart`: where a last settlement that no call takes goes (a line of its
   * own); `finished`: what resolves once the run has ended and its last
   * settlement was given to {@link ended} (or could not be had).
   */
  constructor(
    apart: (report: ChangeReport) => void,
    finished: () => Promise<unknown> | undefined,
  ) {
    this.#apart = apart;
    this.#finished = finished;
  }

  /**
   * A call starts on this run (until {@link leave}: its call and its
   * settlement); `hold`: its changes are held for review, not applied.
   */
  enter(hold?: HoldRequest): void {
    this.#calls++;
    this.layers?.holds?.enter(hold);
  }

  /** A call is done, settled; a last settlement none of the calls took is reported apart. */
  leave(hold?: HoldRequest): void {
    this.layers?.holds?.leave(hold);
    if (--this.#calls > 0 || !this.#last) return;
    const last = this.#last;
    this.#last = undefined;
    if (!isEmptyReport(last)) this.#apart(last);
  }

  /** The run ended: its last settlement, held for the calls it cut, else reported apart. */
  ended(report: ChangeReport): void {
    if (this.#calls > 0) this.#last = report;
    else if (!isEmptyReport(report)) this.#apart(report);
  }

  /**
   * What settles a call of this run: its layers while the run is `live`;
   * once it has ended under the call, its last settlement (taken once: a
   * second call cut with it gets an empty list, the changes being listed on
   * the first). Undefined when the run has no layers.
   */
  settles(live: boolean): Settles | undefined {
    if (live) return this.layers;
    if (!this.layers) return undefined;
    return {
      settle: async () => {
        await this.#finished();
        const last = this.#last ?? emptyReport();
        this.#last = undefined;
        return last;
      },
    };
  }
}
