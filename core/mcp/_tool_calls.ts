/**
 * `tools/call`: an unknown name is refused (audited `denied`), a call
 * beyond what its request's rate ticket holds is refused (`rate_limit`),
 * the call waits for a slot of the instance's gate in its caller's queue
 * (served round robin; beyond the caller's or the instance's queue a tool
 * error, audited), then runs in the registry with the call's notifications
 * and asks; its result is mapped to MCP. A revoked session's calls stop.
 *
 * @module
 */
import {
  type CallToolResult,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
} from "@modelcontextprotocol/server";
import type { ToolResult } from "../tool/mod.ts";
import type { CallGate, GateCaller } from "./_call_gate.ts";
import { ticketOf } from "./_call_ticket.ts";
import { type CallExtra, callExtra, isModern } from "./_call_extra.ts";
import { CallNotifications } from "./_call_notifications.ts";
import { callToolResult, errorResult } from "./_call_result.ts";
import { type ClientAsks, clientAsks, roundAsks } from "./_client_asks.ts";
import type { InputRounds, RoundAsk } from "./_input_rounds.ts";
import { LogLevel } from "./_log_level.ts";
import type { McpRegistry } from "./_mcp_registry.ts";
import type { SessionPrincipal } from "./_session_principal.ts";
import { startTask } from "./tasks/_task_calls.ts";
import type { TaskStore } from "./tasks/_task_store.ts";

/** What the calls of one session run with. */
export interface ToolCallContext {
  registry: McpRegistry;
  /** The instance's gate. */
  gate: CallGate;
  /** The session's caller at the gate: its queue and caps (default: no caps of its own). */
  caller?: GateCaller;
  /** The session's principal. */
  principal: SessionPrincipal;
  /** Who the session is, for the audit log. */
  identity?: string;
  /** False: never ask the client through elicitation. */
  elicitation?: boolean;
  /** The session's log level. */
  logLevel: LogLevel;
  /** The instance's parked calls: a 2026-07-28 client's questions become rounds. */
  rounds?: InputRounds;
  /** The instance's tasks (./tasks/): a 2026-07-28 call of a task tool may run as one. */
  tasks?: TaskStore;
  /** Hold a task as live work of the caller's credential (revoked: `end` cancels it). */
  holdTask?: (end: (reason: Error) => void) => () => void;
}

/**
 * Runs one `tools/call` of a session: the SDK's route and the stdio lane
 * (./fast_call.ts) run this same handler, so every check is on both.
 */
export type ToolCallHandler = (
  name: string,
  args: Record<string, unknown>,
  extra: CallExtra,
) => Promise<CallToolResult>;

/** Answer `tools/call` on `server` (before it connects); returns the handler. */
export function serveToolCalls(server: Server, context: ToolCallContext): ToolCallHandler {
  const handler: ToolCallHandler = (name, args, extra) => _call(server, context, name, args, extra);
  server.setRequestHandler(
    "tools/call",
    (request, ctx) =>
      handler(request.params.name, request.params.arguments ?? {}, callExtra(ctx, isModern(ctx))),
  );
  return handler;
}

async function _call(
  server: Server,
  context: ToolCallContext,
  name: string,
  args: Record<string, unknown>,
  extra: CallExtra,
): Promise<CallToolResult> {
  if (extra.modern && context.rounds) return await _roundCall(context, name, args, extra);
  // The caller's revocation stops the call too (its reason tells the audit).
  const signal = AbortSignal.any([extra.signal, context.principal.signal]);
  const asks = clientAsks(server, extra, context.elicitation);
  return await _run(context, name, args, extra, signal, asks, context.logLevel);
}

/**
 * A call of a 2026-07-28 client: its questions are rounds of this request
 * (./_input_rounds.ts). The call is not the first request's: it outlives
 * that answer while parked, and ends with its principal, its last round
 * or the rounds' timeout.
 */
function _roundCall(
  context: ToolCallContext,
  name: string,
  args: Record<string, unknown>,
  extra: CallExtra,
): Promise<CallToolResult> {
  const rounds = context.rounds!;
  const modern = extra.modern!;
  const key = `${name}\0${JSON.stringify(args)}`;
  const principal = context.principal.name;
  const caps = modern.clientCapabilities;
  const run = (ask: RoundAsk, parked: AbortSignal, on = extra) =>
    _run(
      context,
      name,
      args,
      on,
      AbortSignal.any([parked, context.principal.signal]),
      roundAsks(ask, caps),
      LogLevel.of(modern.logLevel),
    );
  const tool = context.tasks && context.registry.list().find((t) => t.name === name);
  const task = tool && startTask(
    {
      tool,
      principal,
      key,
      capabilities: caps,
      requestState: modern.requestState,
      inputResponses: modern.inputResponses,
      // No request waits for a task: its notifications have nowhere to go.
      start: (ask, parked) => run(ask, parked, { ...extra, sendNotification: _dropped }),
      hold: context.holdTask,
    },
    rounds,
    context.tasks!,
  );
  if (task) return Promise.resolve(task as CallToolResult);
  if (modern.requestState !== undefined) {
    return rounds.resume(
      modern.requestState,
      principal,
      key,
      caps,
      modern.inputResponses,
    ) as Promise<CallToolResult>;
  }
  // Answers given ahead in the first request answer only the tool's own named questions.
  return rounds.begin(principal, key, caps, run, modern.inputResponses) as Promise<
    CallToolResult
  >;
}

const _dropped = () => Promise.resolve();

async function _run(
  context: ToolCallContext,
  name: string,
  args: Record<string, unknown>,
  extra: CallExtra,
  signal: AbortSignal,
  { confirm, onAsk }: ClientAsks,
  logLevel: LogLevel,
): Promise<CallToolResult> {
  const { registry, principal, identity } = context;
  const info = registry.list().find((t) => t.name === name);
  const release = await _admit(context, name, args, signal, extra, info !== undefined);
  if (typeof release !== "function") return release;
  const notes = new CallNotifications(extra, name, logLevel);
  let result: ToolResult;
  let counted = false;
  try {
    // A call that arrives as its session closes starts nothing that would outlive it.
    if (principal.ended) return errorResult(`Cannot run tool "${name}": the session has ended`);
    principal.running++;
    counted = true;
    result = await registry.call(name, args, {
      principal: principal.name,
      // The audit line's session is the principal: one per MCP session (or stateless caller).
      session: principal.name,
      ...(identity ? { identity } : {}),
      signal,
      onReport: notes.onReport,
      onLog: (text) => notes.log("debug", text),
      confirm,
      onAsk,
      ...(typeof extra._meta?.traceparent === "string"
        ? { traceparent: extra._meta.traceparent }
        : {}),
    });
  } catch (err) {
    if (err instanceof TypeError) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, err.message);
    }
    throw err;
  } finally {
    if (counted) principal.running--;
    release();
  }
  await notes.sent;
  return callToolResult(result, info?.outputSchema !== undefined);
}

/**
 * Refused before the registry runs it, audited here as `denied`: an unknown
 * name (an MCP error), beyond the request's rate ticket or with no slot (a
 * tool error). Else the slot's release.
 */
async function _admit(
  context: ToolCallContext,
  name: string,
  args: unknown,
  signal: AbortSignal,
  extra: CallExtra,
  known: boolean,
): Promise<(() => void) | CallToolResult> {
  const { registry, gate, caller } = context;
  const who = {
    principal: context.principal.name,
    session: context.principal.name,
    identity: context.identity,
  };
  if (!known) {
    const message = registry.unknownToolMessage(name);
    await registry.auditRefusal?.(name, args, who, "unknown_tool", message).catch(() => {});
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, message);
  }
  // Calls per minute: each call of the request takes one of what its admission granted.
  const ticket = ticketOf(extra);
  if (ticket && !ticket.take()) {
    await registry.auditRefusal?.(name, args, who, "rate_limit", ticket.message).catch(() => {});
    return errorResult(`Cannot run tool "${name}": ${ticket.message}`);
  }
  const release = await gate.acquire(signal, caller);
  if (release) return release;
  const message = gate.refusal(caller);
  await registry.auditRefusal?.(name, args, who, "limits", message).catch(() => {});
  return errorResult(`Cannot run tool "${name}": ${message}`);
}
