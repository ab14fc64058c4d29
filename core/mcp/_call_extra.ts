/**
 * What a request handler gets besides the request, as corral's own shape:
 * the cancellation signal, `_meta`, the request's ticket (`authInfo`), and
 * the way back to the client of this request (notifications, and on a
 * 2025-11-25 session requests of its own). Made from the v2 SDK's handler
 * context ({@link callExtra}) or by the stdio lane (./fast_call.ts), so
 * the call path does not depend on either.
 *
 * @module
 */
import type { AuthInfo, ServerContext } from "@modelcontextprotocol/server";

/** A request sent back to the client of a call (2025-11-25 only). */
export interface ClientRequest {
  method: string;
  params?: Record<string, unknown>;
}

/** The `extra` of one request handled by corral's MCP server. */
export interface CallExtra {
  /** Aborted when the client cancels the request or goes away. */
  signal: AbortSignal;
  /** The request's `_meta` (a progress token, a trace context). */
  _meta?: Record<string, unknown>;
  /** The JSON-RPC id of the request. */
  requestId: string | number;
  /** The transport's session, if any. */
  sessionId?: string;
  /** Set by corral's HTTP front, never by a client (the call ticket, ./_call_ticket.ts). */
  authInfo?: AuthInfo;
  /** A notification related to this request. */
  sendNotification(notification: { method: string; params?: Record<string, unknown> }): Promise<
    void
  >;
  /** A request to the client related to this one (a 2025-11-25 session only). */
  sendRequest(
    request: ClientRequest,
    options?: { signal?: AbortSignal; timeout?: number },
  ): Promise<unknown>;
  /** The 2026-07-28 view of this request, when it is one: see {@link ModernRequest}. */
  modern?: ModernRequest;
}

/** What a 2026-07-28 request carries in its own `_meta` and params. */
export interface ModernRequest {
  /** The client's capabilities, declared on this request. */
  clientCapabilities: Record<string, unknown>;
  /** The answers of a retried request (`inputResponses`), untrusted. */
  inputResponses?: Record<string, unknown>;
  /** The verified request state of a retried request (corral's own, see ./_input_rounds.ts). */
  requestState?: unknown;
  /** The least log level this request wants (`io.modelcontextprotocol/logLevel`), if any. */
  logLevel?: string;
}

/** True when the request of `ctx` is a 2026-07-28 one (its `_meta` names its revision). */
export function isModern(ctx: ServerContext): boolean {
  return ctx.mcpReq.envelope?.[_VERSION as never] !== undefined;
}

const _VERSION = "io.modelcontextprotocol/protocolVersion";
const _CAPS = "io.modelcontextprotocol/clientCapabilities";
const _LOG = "io.modelcontextprotocol/logLevel";

/**
 * corral's {@link CallExtra} of a v2 SDK handler context.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { callExtra } from "./_call_extra.ts";
 * const signal = new AbortController().signal;
 * const extra = callExtra({
 *   mcpReq: { id: 7, method: "tools/call", signal, _meta: { progressToken: 1 },
 *     requestState: () => undefined, send: () => Promise.resolve({}),
 *     notify: () => Promise.resolve() },
 * } as never, false);
 * assert.equal(extra.requestId, 7);
 * assert.equal(extra._meta?.progressToken, 1);
 * assert.equal(extra.modern, undefined);
 * ```
 */
export function callExtra(ctx: ServerContext, modern: boolean): CallExtra {
  const req = ctx.mcpReq;
  return {
    signal: req.signal,
    _meta: req._meta as Record<string, unknown> | undefined,
    requestId: req.id,
    sessionId: ctx.sessionId,
    authInfo: ctx.http?.authInfo,
    sendNotification: (n) => req.notify(n as never),
    sendRequest: (r, options) => req.send(r as never, options as never) as Promise<unknown>,
    modern: modern
      ? {
        clientCapabilities: (req.envelope?.[_CAPS as never] ?? {}) as Record<string, unknown>,
        logLevel: req.envelope?.[_LOG as never] as string | undefined,
        inputResponses: req.inputResponses,
        requestState: req.requestState(),
      }
      : undefined,
  };
}
