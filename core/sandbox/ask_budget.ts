/**
 * The questions ONE call asks its client (sampling, elicitation), on the
 * host: counted, bounded and audited, and valid only while the call runs.
 *
 * @module
 */
import { measureArgs } from "../tool/mod.ts";
import type { AskKind } from "./protocol.ts";

/** Default of the policy's `max_asks`: questions one call may ask its client. */
export const DEFAULT_MAX_ASKS = 20;
/** Default of the policy's `max_asks_at_once`: questions of one call open at once. */
export const DEFAULT_MAX_ASKS_AT_ONCE = 2;
/** Default of the policy's `max_ask_bytes`: questions and answers of one call, as JSON (4 MiB). */
export const DEFAULT_MAX_ASK_BYTES = 4 * 1024 * 1024;
/** Refusals of one call that get an audit line each (a flood gets one more line, with its count). */
export const AUDITED_REFUSALS = 20;

/** The policy keys of {@link AskBudget}. */
export interface AskLimits {
  max_asks?: number;
  max_asks_at_once?: number;
  max_ask_bytes?: number;
  /** Where the entry is, for messages: `plugins.default`. */
  where?: string;
  own?: string;
  /** The permissions.json to edit (default: named as `permissions.json`). */
  file?: string;
}

/** Sends a question to the call's own client; `ended` aborts when the call returns. */
export type AskSender = (kind: AskKind, params: unknown, ended?: AbortSignal) => Promise<unknown>;

/** Hears how each question ended: `answered`, `failed` or `denied` (with the reason). */
export type AskAudit = (kind: AskKind, outcome: string, started: number, reason?: string) => void;

/** A question the host refused (a limit, no client, or its call has ended). */
export class AskRefusedError extends Error {
  override name = "AskRefusedError";
}

/**
 * The questions of ONE call: at most `max_asks` in all, `max_asks_at_once`
 * open at once, `max_ask_bytes` of questions and answers, each sent only
 * through `send` (the client of this call; absent: refused). Valid until
 * {@link AskBudget.end} (the call returned, also on `using`), which
 * withdraws the questions still open. Every outcome goes to `audit`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AskBudget } from "./ask_budget.ts";
 * const seen: string[] = [];
 * using budget = new AskBudget({ max_asks: 1 }, () => Promise.resolve({ ok: true }), (_k, o) => seen.push(o));
 * assert.deepEqual(await budget.ask("sample", {}), { ok: true });
 * await assert.rejects(budget.ask("sample", {}), /max_asks/);
 * assert.deepEqual(seen, ["answered", "denied"]);
 * ```
 */
export class AskBudget {
  readonly #limits: Required<Omit<AskLimits, "where" | "own" | "file">>;
  readonly #entry: string;
  readonly #send: AskSender | undefined;
  readonly #audit: AskAudit;
  #asked = 0;
  #open = 0;
  #bytes = 0;
  #refused = 0;
  #done = false;
  /** Aborted at the end; made when a question is first sent (only a sent one holds it). */
  #ended?: AbortController;

  constructor(limits: AskLimits, send: AskSender | undefined, audit: AskAudit = () => {}) {
    this.#limits = {
      max_asks: limits.max_asks ?? DEFAULT_MAX_ASKS,
      max_asks_at_once: limits.max_asks_at_once ?? DEFAULT_MAX_ASKS_AT_ONCE,
      max_ask_bytes: limits.max_ask_bytes ?? DEFAULT_MAX_ASK_BYTES,
    };
    this.#entry = `${limits.own ?? limits.where ?? "defaults"} or defaults of ${
      limits.file ?? "permissions.json"
    }`;
    this.#send = send;
    this.#audit = audit;
  }

  /** Whether the call has ended (every later question is refused). */
  get ended(): boolean {
    return this.#done;
  }

  /** Ask the call's client, within the limits; an {@link AskRefusedError} when they forbid it. */
  async ask(kind: AskKind, params: unknown): Promise<unknown> {
    const started = performance.now();
    let counted = false;
    try {
      this.#admit(kind, params);
      this.#asked++;
      this.#open++;
      counted = true;
      this.#ended ??= new AbortController();
      const answer = await this.#send!(kind, params, this.#ended.signal);
      if (this.ended) {
        throw new AskRefusedError(`the call has ended; its ${kind} answer is dropped`);
      }
      this.#spend(_size(answer, this.#limits.max_ask_bytes), "the answers");
      this.#audit(kind, "answered", started);
      return answer;
    } catch (err) {
      const denied = err instanceof AskRefusedError;
      if (!denied || ++this.#refused <= AUDITED_REFUSALS) {
        this.#audit(kind, denied ? "denied" : "failed", started, String(err));
      }
      throw err;
    } finally {
      if (counted) this.#open--;
    }
  }

  /** The call returned: no more questions; open ones are withdrawn; a flood's count audited. */
  end(): void {
    if (this.#done) return;
    this.#done = true;
    // Questions still open are withdrawn (a call that asked none has nothing to abort).
    this.#ended?.abort(new AskRefusedError("the call has ended"));
    const more = this.#refused - AUDITED_REFUSALS;
    if (more > 0) {
      this.#audit("sample", "denied", performance.now(), `${more} more requests refused`);
    }
  }

  [Symbol.dispose](): void {
    this.end();
  }

  #admit(kind: AskKind, params: unknown): void {
    const l = this.#limits;
    const key = (name: string) => `(the limit "${name}" is set in ${this.#entry})`;
    if (this.ended) {
      throw new AskRefusedError(
        `the call has ended: a ${kind} request is only possible while its own call runs`,
      );
    }
    if (!this.#send) {
      throw new AskRefusedError(
        `no client can answer a ${kind} request here (only an MCP client that supports it can)`,
      );
    }
    if (this.#asked >= l.max_asks) {
      throw new AskRefusedError(
        `too many requests to the client: ${l.max_asks} in this call ${key("max_asks")}`,
      );
    }
    if (this.#open >= l.max_asks_at_once) {
      throw new AskRefusedError(
        `too many requests to the client at once: ${l.max_asks_at_once} are open ` +
          key("max_asks_at_once"),
      );
    }
    this.#spend(_size(params, l.max_ask_bytes), `the ${kind} request`);
  }

  #spend(bytes: number, what: string): void {
    const cap = this.#limits.max_ask_bytes;
    if (this.#bytes + bytes > cap) {
      throw new AskRefusedError(
        `${what} would pass ${cap} bytes of requests and answers in this call (the limit ` +
          `"max_ask_bytes" is set in ${this.#entry})`,
      );
    }
    this.#bytes += bytes;
  }
}

/** Size as JSON, measured iteratively (a hostile sandbox may send anything); over: Infinity. */
function _size(value: unknown, cap: number): number {
  const m = measureArgs(value ?? null, 64, cap);
  return m.over ? Infinity : m.bytes;
}
