/**
 * How many times one call may ask its client (sampling, elicitation), per
 * the identity's `limits.sampling_per_call` and `limits.elicitation_per_call`.
 *
 * @module
 */

/** The kinds of question a tool can ask its client. */
export type AskKindName = "sampling" | "elicitation";

/** One call's questions: the caps and how many were asked. */
export class AskBudget {
  #caps: Record<AskKindName, number>;
  #used: Record<AskKindName, number> = { sampling: 0, elicitation: 0 };

  /**
   * A budget; an undefined cap is not limited.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { AskBudget } from "./ask_budget.ts";
   * const b = new AskBudget({ samplingPerCall: 1, elicitationPerCall: 0 });
   * assert.equal(b.take("sampling"), null);
   * assert.match(b.take("sampling")!, /1 sampling request per call/);
   * assert.match(b.take("elicitation")!, /no elicitation requests/);
   * ```
   */
  constructor(limits: { samplingPerCall?: number; elicitationPerCall?: number }) {
    this.#caps = {
      sampling: limits.samplingPerCall ?? Infinity,
      elicitation: limits.elicitationPerCall ?? Infinity,
    };
  }

  /** Take one question of `kind`: null when allowed, else why not. */
  take(kind: AskKindName): string | null {
    const cap = this.#caps[kind];
    if (this.#used[kind] < cap) {
      this.#used[kind]++;
      return null;
    }
    return cap === 0
      ? `this caller may make no ${kind} requests (limits.${kind}_per_call is 0)`
      : `this caller may make ${cap} ${kind} request${cap === 1 ? "" : "s"} per call ` +
        `(limits.${kind}_per_call)`;
  }
}
