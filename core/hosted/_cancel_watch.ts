/**
 * The requests corral cancelled on one hosted server's channel
 * (./_stdio_channel.ts tells it of each `notifications/cancelled` the SDK
 * client sends), and the server's behaviour after a cancellation:
 *
 * - a late answer to a cancelled request is dropped quietly (neither handed
 *   to the SDK nor taken for a forged id);
 * - progress on a cancelled request is never delivered; a caller's
 *   cancellation that is followed ({@link CancelWatch.follow}) counts as
 *   ignored when the server still reports progress on it after
 *   {@link CANCEL_GRACE_MS} and has not answered it when the call's own
 *   timeout passes (reported through `onIgnored`; its owner kills it).
 *
 * At most {@link CANCELLED_KEPT} cancelled ids are remembered.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CancelWatch } from "./_cancel_watch.ts";
 * const watch = new CancelWatch(() => {});
 * watch.sent(7);
 * assert.equal(watch.last, 7);
 * assert.equal(watch.progress(7), true); // on a cancelled request: not delivered
 * assert.equal(watch.answered(7), true); // its late answer: dropped, and forgotten
 * assert.equal(watch.answered(7), false);
 * watch.close();
 * ```
 *
 * @module
 */

/**
 * How long a server has, after a call is cancelled, to answer a `ping` and
 * to stop reporting progress on that call before it counts as ignoring the
 * cancellation.
 */
export const CANCEL_GRACE_MS = 2000;

/** How many cancelled ids are remembered, so a late answer is dropped quietly. */
export const CANCELLED_KEPT = 256;

/** A JSON-RPC request id. */
export type RequestId = string | number;

/** A caller's cancellation, followed until the call's own timeout would have passed. */
interface _Followed {
  at: number;
  /** Progress on it came after the grace: the server works on. */
  working: boolean;
  timer: ReturnType<typeof setTimeout>;
}

/** The cancelled requests of one channel. */
export class CancelWatch {
  /** Cancelled ids: followed (a caller's cancellation), or null. */
  readonly #cancelled = new Map<RequestId, _Followed | null>();
  readonly #onIgnored: (why: string) => void;
  #last?: RequestId;
  #closed = false;

  /** `onIgnored` hears that the server ignores a cancellation (its owner kills it). */
  constructor(onIgnored: (why: string) => void) {
    this.#onIgnored = onIgnored;
  }

  /** The channel sent `notifications/cancelled` for `id`. */
  sent(id: RequestId): void {
    if (this.#cancelled.has(id)) return;
    this.#cancelled.set(id, null);
    this.#last = id;
    if (this.#cancelled.size > CANCELLED_KEPT) this.#forget(this.#cancelled.keys().next().value!);
  }

  /** The id of the last cancellation sent (read at once after the abort that sent it). */
  get last(): RequestId | undefined {
    return this.#last;
  }

  /**
   * Follow cancelled request `id` (a caller's cancellation of a call to
   * `tool`) until `deadline` (performance.now()), the call's own timeout:
   * a server still reporting progress on it then ignores the cancellation.
   */
  follow(id: RequestId, tool: string, deadline: number): void {
    if (this.#closed || this.#cancelled.get(id) !== null) return;
    const f: _Followed = {
      at: performance.now(),
      working: false,
      timer: setTimeout(() => {
        if (this.#cancelled.get(id) !== f) return;
        this.#cancelled.set(id, null); // still known: a late answer is dropped quietly
        if (f.working && !this.#closed) {
          this.#onIgnored(
            `it still worked on a cancelled call to ${tool} when the call's timeout passed`,
          );
        }
      }, Math.max(0, deadline - performance.now())),
    };
    this.#cancelled.set(id, f);
  }

  /** A response to `id`: true when `id` was cancelled (its answer is dropped; `id` forgotten). */
  answered(id: unknown): boolean {
    return (typeof id === "string" || typeof id === "number") && this.#forget(id);
  }

  /** Progress with `token`: true when it is a cancelled request's (not delivered). */
  progress(token: unknown): boolean {
    if (typeof token !== "string" && typeof token !== "number") return false;
    const f = this.#cancelled.get(token);
    if (f === undefined) return false;
    if (f && performance.now() - f.at > CANCEL_GRACE_MS) f.working = true;
    return true;
  }

  /** The channel closed: nothing is followed any more. */
  close(): void {
    this.#closed = true;
    for (const id of [...this.#cancelled.keys()]) this.#forget(id);
  }

  #forget(id: RequestId): boolean {
    const f = this.#cancelled.get(id);
    if (f) clearTimeout(f.timer);
    return this.#cancelled.delete(id);
  }
}
