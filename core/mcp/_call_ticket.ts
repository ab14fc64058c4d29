/**
 * Calls per minute, counted per call: a request's admission takes as many
 * calls from its identity's bucket as it holds `tools/call` messages (each
 * call of a JSON-RPC batch counts), and gets a ticket for what was granted.
 * The ticket travels with the request to the MCP server (the transport's
 * `authInfo`, which no client can set), and each call takes one from it:
 * a call beyond it is refused (`rate_limit`), however the request was built.
 *
 * @module
 */
import type { AuthInfo } from "@modelcontextprotocol/server";
import type { CallExtra } from "./_call_extra.ts";

const _KEY = "corral/ticket";

/**
 * What one request may still run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CallTicket } from "./_call_ticket.ts";
 * const t = new CallTicket(1, "3 calls per minute");
 * assert.ok(t.take() && !t.take());
 * ```
 */
export class CallTicket {
  #left: number;

  /**
   * A ticket for `granted` calls; `message` says why a call beyond it is
   * refused, `retryAfterSeconds` when the bucket holds one more.
   */
  constructor(
    readonly granted: number,
    readonly message: string,
    readonly retryAfterSeconds = 1,
  ) {
    this.#left = granted;
  }

  /** Take one call; false when none is left. */
  take(): boolean {
    if (this.#left <= 0) return false;
    this.#left--;
    return true;
  }
}

/** The transport's `authInfo` carrying `ticket` to the request's handlers. */
export function ticketAuth(ticket: CallTicket | undefined): AuthInfo | undefined {
  if (!ticket) return undefined;
  return { token: "", clientId: "corral", scopes: [], extra: { [_KEY]: ticket } };
}

/** The ticket of the request a handler runs for, if its admission gave one. */
export function ticketOf(extra: Pick<CallExtra, "authInfo">): CallTicket | undefined {
  const t = extra.authInfo?.extra?.[_KEY];
  return t instanceof CallTicket ? t : undefined;
}
