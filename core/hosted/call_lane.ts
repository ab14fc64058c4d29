/**
 * A hosted server's `tools/call` through one JSON-RPC layer of corral's own
 * instead of the MCP SDK's `Client` (which keeps everything else: initialize,
 * lists, resources, prompts, the server's own requests and logs).
 *
 * The checked channel (./_stdio_channel.ts) has already parsed each line and
 * capped its size; it hands the lane every response and progress
 * notification before the SDK sees them:
 *
 * - the lane's ids are strings (`corral:<n>`), the SDK's are numbers, so the
 *   two never collide; a response to an id the lane did not send, or already
 *   settled, is not the lane's: the channel refuses it as forged;
 * - a response to a call that was cancelled (abort or timeout) is dropped;
 * - a call the caller cancels (its signal aborted) fails alone with
 *   {@link CallCancelled} after `notifications/cancelled`; the server keeps
 *   running unless it shows it ignores the cancellation, reported through
 *   `onIgnored` (its owner kills it): it does not answer a `ping` sent with
 *   the cancel within {@link CANCEL_GRACE_MS} (stuck), or it still reports
 *   progress on the cancelled call after that grace and has not answered it
 *   when the call's own timeout passes (the cancelled work is held to the
 *   timeout the call had: ./_cancel_watch.ts); a server that works on
 *   silently is not seen;
 * - `notifications/progress` reaches a call only with that call's own token;
 * - the result's shape is checked (an object; `content` an array of objects
 *   with a string `type`; `isError` a boolean; `structuredContent` and
 *   `_meta` objects), then `structuredContent` against the tool's
 *   `outputSchema` as the SDK does; an error response becomes the SDK's
 *   `ProtocolError`, a timeout `SdkError(RequestTimeout)` ({@link CallTimedOut})
 *   after `notifications/cancelled`, a closed channel `SdkError(ConnectionClosed)`.
 *
 * @module
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
} from "@modelcontextprotocol/client";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/client/validators/ajv";
import { CANCEL_GRACE_MS, CancelWatch } from "./_cancel_watch.ts";

export { CANCEL_GRACE_MS } from "./_cancel_watch.ts";

/** What one call through the lane brings along. */
export interface LaneCall {
  timeoutMs: number;
  signal?: AbortSignal;
  onProgress?: (progress: number, total?: number, message?: string) => void;
}

/** The prefix of the lane's ids and progress tokens. */
export const LANE_ID_PREFIX = "corral:";

/** A call its caller cancelled; the server was sent `notifications/cancelled`. */
export class CallCancelled extends Error {
  constructor(tool: string) {
    super(`the call to ${tool} was cancelled`);
    this.name = "CallCancelled";
  }
}

/**
 * A call given up on when its own timeout passed (`notifications/cancelled`
 * was sent): the SDK's `SdkError(RequestTimeout)`, of a class of its own so
 * that no other error (a server's error response, a listing's timeout) is
 * ever taken for it.
 */
export class CallTimedOut extends SdkError {
  constructor(timeoutMs: number) {
    super(SdkErrorCode.RequestTimeout, "Request timed out", { timeout: timeoutMs });
    this.name = "CallTimedOut";
  }
}

type _Validate = (value: unknown) => { valid: boolean; errorMessage?: string };

interface _Pending {
  tool: string;
  /** When the call's own timeout passes (performance.now()). */
  deadline: number;
  timeoutMs: number;
  resolve(result: Record<string, unknown>): void;
  reject(error: unknown): void;
  onProgress?: LaneCall["onProgress"];
  done(): void;
}

/** The `tools/call` lane of one hosted server's channel. */
export class CallLane {
  readonly #server: string;
  readonly #write: (line: string) => Promise<void>;
  readonly #pending = new Map<string, _Pending>();
  /** Its cancelled ids (./_cancel_watch.ts): a caller's cancellation followed to the call's deadline. */
  readonly #cancelled: CancelWatch;
  /** Pings sent with a cancellation: the timers that report the server ignoring it. */
  readonly #pings = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #onIgnored: (why: string) => void;
  #next = 0;
  #closed = false;
  /**
   * One timer for every open call's timeout, armed for the earliest
   * deadline: a call costs no timer of its own (a setTimeout and a
   * clearTimeout each, ≈ 10 µs a call in a profile of a busy process).
   */
  #timer?: ReturnType<typeof setTimeout>;
  #timerAt = Infinity;
  #schemas = new Map<string, unknown>();
  #validators = new Map<string, _Validate>();
  #taskRequired = new Set<string>();
  #ajv?: AjvJsonSchemaValidator;

  /**
   * `write` sends one line (the channel's writer); `server` names it in
   * errors; `onIgnored` hears that the server ignores a cancellation (its
   * owner then kills it).
   */
  constructor(
    server: string,
    write: (line: string) => Promise<void>,
    onIgnored: (why: string) => void = () => {},
  ) {
    this.#server = server;
    this.#write = write;
    this.#onIgnored = onIgnored;
    this.#cancelled = new CancelWatch(onIgnored);
  }

  /**
   * What the server listed (its raw tools): output schemas are checked
   * and tools that require tasks refused, as the SDK client does.
   */
  setTools(tools: ReadonlyArray<Record<string, unknown>>): void {
    this.#schemas.clear();
    this.#validators.clear();
    this.#taskRequired.clear();
    for (const t of tools) {
      const name = String(t.name);
      if (t.outputSchema) this.#schemas.set(name, t.outputSchema);
      const execution = t.execution as { taskSupport?: unknown } | undefined;
      if (execution?.taskSupport === "required") this.#taskRequired.add(name);
    }
  }

  /** Call `tool` (the server's name for it); resolves to its checked result. */
  call(tool: string, args: unknown, call: LaneCall): Promise<Record<string, unknown>> {
    if (this.#taskRequired.has(tool)) {
      return Promise.reject(taskRequired(tool));
    }
    if (this.#closed) return Promise.reject(connectionClosed());
    const signal = call.signal;
    if (signal?.aborted) return Promise.reject(new CallCancelled(tool));
    const id = `${LANE_ID_PREFIX}${++this.#next}`;
    return new Promise((resolve, reject) => {
      const onAbort = () => this.#cancel(id, new CallCancelled(tool));
      signal?.addEventListener("abort", onAbort, { once: true });
      const deadline = performance.now() + call.timeoutMs;
      this.#pending.set(id, {
        tool,
        deadline,
        timeoutMs: call.timeoutMs,
        resolve,
        reject,
        onProgress: call.onProgress,
        done: () => signal?.removeEventListener("abort", onAbort),
      });
      this.#arm(deadline);
      const params = {
        name: tool,
        arguments: args ?? {},
        ...(call.onProgress ? { _meta: { progressToken: id } } : {}),
      };
      this.#write(JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params }) + "\n")
        .catch((err) => this.#settle(id)?.reject(err));
    });
  }

  /**
   * A response the channel parsed: true when it was the lane's (settled, or
   * a late answer to a cancelled call, dropped); false leaves it to the
   * channel, which refuses an id nobody sent.
   */
  response(message: Record<string, unknown>): boolean {
    const id = message.id;
    if (typeof id !== "string") return false;
    const ping = this.#pings.get(id);
    if (ping !== undefined) {
      clearTimeout(ping);
      return this.#pings.delete(id);
    }
    const p = this.#settle(id);
    if (!p) return this.#cancelled.answered(id);
    const envelope = _envelopeProblem(message);
    if (envelope) {
      p.reject(new Error(this.#malformed(p.tool, envelope)));
    } else if (message.error !== undefined) {
      const e = message.error as { code: number; message: string; data?: unknown };
      p.reject(ProtocolError.fromError(e.code, e.message, e.data));
    } else {
      const result = message.result as Record<string, unknown>;
      const problem = _resultProblem(result);
      if (problem) p.reject(new Error(this.#malformed(p.tool, problem)));
      else {
        try {
          this.#checkOutput(p.tool, result);
          p.resolve(result);
        } catch (err) {
          p.reject(err);
        }
      }
    }
    return true;
  }

  /** Whether `token` is one of the lane's (a string with its prefix). */
  owns(token: unknown): boolean {
    return typeof token === "string" && token.startsWith(LANE_ID_PREFIX);
  }

  /**
   * The params of a `notifications/progress` with a token of the lane's:
   * delivered only to the open call holding that token, and only when
   * well-formed; anything else is dropped.
   */
  progress(params: Record<string, unknown>): void {
    const p = this.#pending.get(params.progressToken as string);
    if (!p) this.#cancelled.progress(params.progressToken);
    const { progress, total, message } = params;
    if (
      !p?.onProgress || typeof progress !== "number" ||
      (total !== undefined && typeof total !== "number") ||
      (message !== undefined && typeof message !== "string")
    ) return;
    try {
      p.onProgress(progress, total as number | undefined, message as string | undefined);
    } catch { /* the caller's own */ }
  }

  /** The channel closed: every open call fails as the SDK's would. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const timer of this.#pings.values()) clearTimeout(timer);
    this.#pings.clear();
    this.#cancelled.close();
    for (const id of [...this.#pending.keys()]) {
      this.#settle(id)?.reject(connectionClosed());
    }
  }

  /** How many calls are open (for tests). */
  get open(): number {
    return this.#pending.size;
  }

  /** The lane's timer fires at `deadline` at the latest (a later one is left as it is). */
  #arm(deadline: number): void {
    if (this.#closed || (this.#timer !== undefined && this.#timerAt <= deadline)) return;
    clearTimeout(this.#timer);
    this.#timerAt = deadline;
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, deadline - performance.now()));
  }

  /**
   * The lane's timer fired: every open call whose deadline passed times
   * out; the timer is armed again for the earliest open deadline, if any.
   */
  #expire(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const [id, p] of [...this.#pending]) {
      if (p.deadline > now) next = Math.min(next, p.deadline);
      else {
        this.#cancel(id, new CallTimedOut(p.timeoutMs));
      }
    }
    if (next < Infinity) this.#arm(next);
  }

  #settle(id: string): _Pending | undefined {
    const p = this.#pending.get(id);
    if (!p) return undefined;
    this.#pending.delete(id);
    p.done();
    return p;
  }

  /**
   * Give up call `id` (a timeout, or its caller's cancellation): the server
   * is told, and after a cancellation asked for a `ping` it must answer
   * within the grace, else it counts as ignoring the cancellation.
   */
  #cancel(id: string, reason: CallTimedOut | CallCancelled): void {
    const p = this.#settle(id);
    if (!p) return;
    const byCaller = reason instanceof CallCancelled;
    this.#cancelled.sent(id);
    if (byCaller) this.#cancelled.follow(id, p.tool, p.deadline);
    const note = { requestId: id, reason: reason.message };
    this.#send({ jsonrpc: "2.0", method: "notifications/cancelled", params: note });
    p.reject(reason);
    if (!byCaller || this.#closed) return;
    const ping = `${LANE_ID_PREFIX}${++this.#next}`;
    this.#pings.set(
      ping,
      setTimeout(() => {
        this.#pings.delete(ping);
        if (!this.#closed) {
          this.#onIgnored(
            `a call to ${p.tool} was cancelled and the server did not answer a ping within ` +
              `${CANCEL_GRACE_MS} ms`,
          );
        }
      }, CANCEL_GRACE_MS),
    );
    this.#send({ jsonrpc: "2.0", id: ping, method: "ping" });
  }

  #send(message: Record<string, unknown>): void {
    this.#write(JSON.stringify(message) + "\n").catch(() => {});
  }

  /** `structuredContent` against the tool's `outputSchema`, as the SDK client checks it. */
  #checkOutput(tool: string, result: Record<string, unknown>): void {
    const schema = this.#schemas.get(tool);
    if (schema === undefined) return;
    if (!result.structuredContent && !result.isError) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        `Tool ${tool} has an output schema but did not return structured content`,
      );
    }
    if (!result.structuredContent) return;
    let check: { valid: boolean; errorMessage?: string };
    try {
      let validate = this.#validators.get(tool);
      if (!validate) {
        this.#ajv ??= new AjvJsonSchemaValidator();
        validate = this.#ajv.getValidator(schema as never) as _Validate;
        this.#validators.set(tool, validate);
      }
      check = validate(result.structuredContent);
    } catch (err) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Failed to validate structured content: ${err instanceof Error ? err.message : err}`,
      );
    }
    if (!check.valid) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Structured content does not match the tool's output schema: ${check.errorMessage}`,
      );
    }
  }

  #malformed(tool: string, problem: string): string {
    return `server "${this.#server}" answered tools/call "${tool}" with a malformed result: ${problem}`;
  }
}

/** The refusal of a tool that requires tasks (corral calls hosted tools without them). */
export function taskRequired(tool: string): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InvalidRequest,
    `Tool "${tool}" requires task-based execution, which corral does not offer`,
  );
}

/** What a call on a closed connection fails with (the SDK's own). */
function connectionClosed(): SdkError {
  return new SdkError(SdkErrorCode.ConnectionClosed, "Connection closed");
}

function _isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** What is wrong with a response's JSON-RPC envelope (strict, as the SDK's schemas are). */
function _envelopeProblem(m: Record<string, unknown>): string | undefined {
  if (m.jsonrpc !== "2.0") return `jsonrpc is not "2.0"`;
  for (const k in m) {
    if (k !== "jsonrpc" && k !== "id" && k !== "result" && k !== "error") {
      return `unknown member "${k}"`;
    }
  }
  if ((m.result === undefined) === (m.error === undefined)) {
    return "it needs either result or error";
  }
  if (m.error === undefined) return undefined;
  const e = m.error;
  if (!_isObject(e) || !Number.isInteger(e.code) || typeof e.message !== "string") {
    return "error needs an integer code and a string message";
  }
  return undefined;
}

/** What is wrong with a `tools/call` result's shape, if anything. */
function _resultProblem(r: unknown): string | undefined {
  if (!_isObject(r)) return "it is not an object";
  if (r._meta !== undefined && !_isObject(r._meta)) return "_meta is not an object";
  if (r.isError !== undefined && typeof r.isError !== "boolean") return "isError is not a boolean";
  if (r.structuredContent !== undefined && !_isObject(r.structuredContent)) {
    return "structuredContent is not an object";
  }
  const content = r.content;
  if (content === undefined) return undefined;
  if (!Array.isArray(content)) return "content is not an array";
  for (let i = 0; i < content.length; i++) {
    const b = content[i];
    if (!_isObject(b)) return `content[${i}] is not an object`;
    if (typeof b.type !== "string") return `content[${i}].type is not a string`;
  }
  return undefined;
}
