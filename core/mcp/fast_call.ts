/**
 * A fast lane for `tools/call` on one MCP connection: a well-formed call
 * goes straight to corral's own `tools/call` handler (the one the SDK
 * `Server` runs: gate, registry, argument limits, audit, confirmation,
 * asks, approval), parsed once and answered with one write, instead of the
 * SDK's dispatch, which validates each message four times with zod.
 *
 * What the lane takes: `{"jsonrpc":"2.0","id":…,"method":"tools/call",
 * "params":{"name":…,"arguments":{…},"_meta":{…}}}` with a string or safe
 * integer id, a string name, an object or no `arguments`, no other keys (a
 * `task` is the SDK's), and a `_meta` without a related task whose
 * `progressToken` is a string or a safe integer; and `notifications/cancelled`
 * for one of its own calls. Anything else returns false, for the SDK to
 * answer as before (its standard errors included).
 *
 * The lane keeps the SDK's semantics: the handler starts after the same two
 * microtask turns as the SDK's (so a call in the same chunk as `initialize`
 * still sees the client's capabilities), gets the same `extra` (signal,
 * `_meta`, notifications and requests related to its id, `sessionId`,
 * `requestId`), its result is checked against `CallToolResultSchema` (a
 * plain text result by hand, anything else by the SDK's own parse), a
 * thrown error becomes the SDK's JSON-RPC error, and a cancelled call is
 * never answered.
 *
 * @module
 */
import {
  type CallToolResult,
  type JSONRPCMessage,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
  specTypeSchemas,
  type Transport,
} from "@modelcontextprotocol/server";
import type { CallExtra } from "./_call_extra.ts";
import type { ToolCallHandler } from "./_tool_calls.ts";

const _RELATED_TASK = "io.modelcontextprotocol/related-task";

type _Id = string | number;
type _Json = Record<string, unknown>;

/** The `tools/call` lane of one connection. */
export class FastCalls {
  /** Calls running in the lane, by id (the SDK keeps its own the same way). */
  readonly #live = new Map<_Id, AbortController>();
  #closed = false;
  #taken = 0;

  /**
   * @param server the connection's SDK server (notifications and requests go through it)
   * @param handler corral's `tools/call` handler, the same the SDK route runs
   * @param transport where answers are written (the server's own transport)
   */
  constructor(
    private readonly server: Server,
    private readonly handler: ToolCallHandler,
    private readonly transport: Pick<Transport, "send" | "sessionId">,
  ) {}

  /** Calls the lane has taken so far. */
  get taken(): number {
    return this.#taken;
  }

  /** True when the lane took `message` (a call of its own or its cancellation). */
  offer(message: unknown): boolean {
    if (this.#closed || !_isObject(message) || message.jsonrpc !== "2.0") return false;
    if (message.method === "tools/call") return this.#call(message);
    if (message.method === "notifications/cancelled") return this.#cancel(message);
    return false;
  }

  /** The connection closed: every call still running is aborted, and none is answered. */
  close(): void {
    this.#closed = true;
    for (const controller of this.#live.values()) controller.abort();
    this.#live.clear();
  }

  #call(message: _Json): boolean {
    const { id, params } = message;
    if (!_onlyKeys(message, 4) || !_isId(id) || !_isObject(params)) return false;
    const { name, arguments: args, _meta } = params;
    const keys = 1 + (args === undefined ? 0 : 1) + (_meta === undefined ? 0 : 1);
    if (typeof name !== "string" || !_onlyKeys(params, keys)) return false;
    if (args !== undefined && !_isRecord(args)) return false;
    if (_meta !== undefined && !_isMeta(_meta)) return false;
    // A 2026-07-28 request (its revision in `_meta`) is the SDK's: envelope, rounds.
    if (_meta !== undefined && (_meta as _Json)[_VERSION] !== undefined) return false;
    this.#taken++;
    const controller = new AbortController();
    this.#live.set(id, controller);
    const extra = this.#extra(id, _meta as CallExtra["_meta"], controller.signal);
    // Two turns, as the SDK's dispatch: a message before this one in the same chunk runs first.
    Promise.resolve().then(() => {}).then(() => this.handler(name, (args ?? {}) as _Json, extra))
      .then(_checkedResult).then(
        (result) =>
          controller.signal.aborted ? undefined : this.#send({ result, jsonrpc: "2.0", id }),
        (error) => controller.signal.aborted ? undefined : this.#send(_errorResponse(id, error)),
      ).catch((error) => this.server.onerror?.(new Error(`Failed to send response: ${error}`)))
      .finally(() => {
        if (this.#live.get(id) === controller) this.#live.delete(id);
      });
    return true;
  }

  #cancel(message: _Json): boolean {
    const { params } = message;
    if (!_onlyKeys(message, 3) || !_isObject(params)) return false;
    const controller = this.#live.get(params.requestId as _Id);
    if (!controller || (params.reason !== undefined && typeof params.reason !== "string")) {
      return false;
    }
    // A `_meta` the SDK's parse would refuse: the SDK ignores the whole message, so does the lane.
    if (params._meta !== undefined && !_isMeta(params._meta, true)) return false;
    controller.abort(params.reason);
    return true;
  }

  #extra(id: _Id, meta: CallExtra["_meta"], signal: AbortSignal): CallExtra {
    const server = this.server;
    return {
      signal,
      sessionId: this.transport.sessionId,
      _meta: meta,
      requestId: id,
      sendNotification: async (notification) => {
        if (signal.aborted) return;
        await server.notification(notification as never, { relatedRequestId: id });
      },
      sendRequest: async (request, options) => {
        if (signal.aborted) {
          throw new ProtocolError(ProtocolErrorCode.InternalError, "Request was cancelled");
        }
        return await server.request(request as never, { ...options, relatedRequestId: id });
      },
    };
  }

  #send(message: _Json): Promise<void> {
    return this.transport.send(message as JSONRPCMessage);
  }
}

/** The SDK's check of a handler's result: a plain text result as it is, else its schema's. */
function _checkedResult(result: CallToolResult): CallToolResult {
  if (_plainResult(result)) return result;
  const parsed = specTypeSchemas.CallToolResult["~standard"].validate(result) as {
    value?: unknown;
    issues?: ReadonlyArray<{ message: string }>;
  };
  if (!parsed.issues) return parsed.value as CallToolResult;
  const error = parsed.issues.map((i) => i.message).join("; ");
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid tools/call result: ${error}`);
}

/**
 * A result the SDK's parse returns unchanged: `content` of `{type: "text",
 * text}` blocks, an optional object `structuredContent`, an optional
 * boolean `isError`, nothing else.
 */
function _plainResult(result: unknown): boolean {
  if (!_isObject(result) || Object.getPrototypeOf(result) !== Object.prototype) return false;
  const { content, structuredContent: structured, isError } = result;
  const keys = 1 + (structured === undefined ? 0 : 1) + (isError === undefined ? 0 : 1);
  if (!Array.isArray(content) || !_onlyKeys(result, keys)) return false;
  if (isError !== undefined && typeof isError !== "boolean") return false;
  if (structured !== undefined && !_isRecord(structured)) return false;
  for (const block of content) {
    if (!_isObject(block) || block.type !== "text" || typeof block.text !== "string") return false;
    if (!_onlyKeys(block, 2)) return false;
  }
  return true;
}

/** The error the SDK sends for a handler's throw. */
function _errorResponse(id: _Id, error: unknown): _Json {
  const e = (error ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: Number.isSafeInteger(e.code) ? e.code : ProtocolErrorCode.InternalError,
      message: e.message ?? "Internal error",
      ...(e.data !== undefined && { data: e.data }),
    },
  };
}

function _isObject(value: unknown): value is _Json {
  return typeof value === "object" && value !== null;
}

function _isId(id: unknown): id is _Id {
  return typeof id === "string" || Number.isSafeInteger(id);
}

/**
 * An object the SDK's parse passes on as it is. Its parse copies a record
 * key by key, and a copied `__proto__` key sets the copy's prototype
 * instead: such an object is left to the SDK.
 */
function _isRecord(value: unknown): value is _Json {
  return _isObject(value) && !Array.isArray(value) && !Object.hasOwn(value, "__proto__");
}

/** A `_meta` the SDK accepts; with a related task only when `task` (else the call is the SDK's). */
const _VERSION = "io.modelcontextprotocol/protocolVersion";

function _isMeta(meta: unknown, task = false): boolean {
  if (!_isRecord(meta)) return false;
  const related = meta[_RELATED_TASK];
  if (
    related !== undefined && (!task || !_isObject(related) || typeof related.taskId !== "string")
  ) {
    return false;
  }
  const token = meta.progressToken;
  return token === undefined || _isId(token);
}

/** `value` has exactly `count` own keys (the caller checked which ones it expects). */
function _onlyKeys(value: _Json, count: number): boolean {
  let n = 0;
  for (const _ in value) if (++n > count) return false;
  return n === count;
}
