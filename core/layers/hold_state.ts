/**
 * Which settlements of a sandbox's layers hold their changes for review
 * instead of applying them (./held_writer.ts): those made while a call that
 * asked for it runs (`--hold`, `"hold": true` for its tool, toolset or
 * server), and, once such a call has settled, those of what the processes
 * it left running write, until another call starts. A call that does not
 * hold, running beside one that does on the same sandbox, has its changes
 * held too: one settlement cannot tell whose a write is.
 *
 * @module
 */

/** Why a call's changes are held, and whose they are. */
export interface HoldRequest {
  /** The tool called. */
  tool: string;
  /** What asked for the hold: `--hold`, `tools.X.hold`, `toolsets.Y.hold`, `servers.Z.hold`. */
  by: string;
  /** The toolset, plugin or server whose sandbox ran it. */
  toolset?: string;
  /** Who called (an HTTP identity; `local` on the command line). */
  identity?: string;
  /** The caller's session. */
  session?: string;
}

/**
 * The holds of one sandbox's layers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { HoldSet } from "./hold_state.ts";
 * const holds = new HoldSet();
 * const req = { tool: "Write", by: "--hold" };
 * holds.enter(req);
 * assert.deepEqual(holds.active(), [req]); // its settlement holds
 * holds.held(holds.active()!);
 * holds.leave(req);
 * assert.deepEqual(holds.active(), [req]); // what it left running writes is held too
 * holds.enter(); // another call, that does not hold, starts
 * assert.equal(holds.active(), undefined);
 * ```
 */
export class HoldSet {
  readonly #calls: HoldRequest[] = [];
  #after: HoldRequest[] | undefined;

  /** A call starts on the sandbox (`req`: it holds its changes). */
  enter(req?: HoldRequest): void {
    if (req) this.#calls.push(req);
    else this.#after = undefined;
  }

  /** A call that started with `req` has settled. */
  leave(req?: HoldRequest): void {
    const i = req ? this.#calls.indexOf(req) : -1;
    if (i >= 0) this.#calls.splice(i, 1);
  }

  /** The holds the next settlement is made for, or undefined when it applies. */
  active(): HoldRequest[] | undefined {
    return this.#calls.length ? [...this.#calls] : this.#after;
  }

  /** A settlement held for `reqs`: later ones hold for them until another call starts. */
  held(reqs: HoldRequest[]): void {
    this.#after = reqs;
  }
}
