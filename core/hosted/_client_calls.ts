/**
 * A hosted server's `tools/call` through the MCP SDK's own `Client`
 * (`@modelcontextprotocol/client`), with corral's rules around it:
 *
 * - a tool that requires tasks is refused (corral calls hosted tools
 *   without them);
 * - the call's timeout is the SDK's (it sends `notifications/cancelled`),
 *   reported as {@link CallTimedOut}, so that no server's error is taken
 *   for it;
 * - a call the caller cancels (its signal aborted) fails alone with
 *   {@link CallCancelled} after the SDK's `notifications/cancelled`; the
 *   server keeps running unless it shows it ignores the cancellation,
 *   reported through `onIgnored` (its owner kills it): it does not answer
 *   a `ping` sent with the cancel within {@link CANCEL_GRACE_MS} (stuck),
 *   or it still reports progress on the cancelled call after that grace and
 *   has not answered it when the call's own timeout passes (followed by the
 *   channel's ./_cancel_watch.ts);
 * - a result the SDK finds malformed, or whose `structuredContent` is not
 *   an object (MCP 2025-11-25 wants one; the SDK 2.x takes any JSON value),
 *   is an error naming the server and the tool; the SDK checks
 *   `structuredContent` against the tool's output schema from the list it
 *   keeps (`listTools`).
 *
 * Progress reaches a call only with its own token (the SDK's), and a late
 * answer to a cancelled call is dropped by the channel (./_stdio_channel.ts).
 *
 * @module
 */
import { type Client, SdkError, SdkErrorCode } from "@modelcontextprotocol/client";
import { CANCEL_GRACE_MS, type CancelWatch } from "./_cancel_watch.ts";
import { CallCancelled, CallTimedOut, type LaneCall, taskRequired } from "./call_lane.ts";

/** The `tools/call` requests of one hosted server, through its SDK client. */
export class ClientCalls {
  readonly #server: string;
  readonly #client: Client;
  readonly #watch: CancelWatch;
  readonly #onIgnored: (why: string) => void;
  #taskRequired = new Set<string>();

  /**
   * `server` names it in errors; `watch` is its channel's; `onIgnored`
   * hears that the server ignores a cancellation (its owner then kills it).
   */
  constructor(
    server: string,
    client: Client,
    watch: CancelWatch,
    onIgnored: (why: string) => void = () => {},
  ) {
    this.#server = server;
    this.#client = client;
    this.#watch = watch;
    this.#onIgnored = onIgnored;
  }

  /** What the server listed (its raw tools): those that require tasks are refused. */
  setTools(tools: ReadonlyArray<Record<string, unknown>>): void {
    this.#taskRequired = new Set(
      tools.filter((t) =>
        (t.execution as { taskSupport?: unknown } | undefined)?.taskSupport ===
          "required"
      ).map((t) => String(t.name)),
    );
  }

  /** Call `tool` (the server's name for it); resolves to its checked result. */
  async call(tool: string, args: unknown, call: LaneCall): Promise<Record<string, unknown>> {
    if (this.#taskRequired.has(tool)) throw taskRequired(tool);
    const signal = call.signal;
    if (signal?.aborted) throw new CallCancelled(tool);
    const deadline = performance.now() + call.timeoutMs;
    // The caller's cancellation aborts the SDK's request, which sends notifications/cancelled
    // as it aborts: the channel's watch has its id at once.
    const abort = new AbortController();
    let cancelled: string | number | undefined;
    const onAbort = () => {
      const before = this.#watch.last;
      abort.abort(new CallCancelled(tool));
      if (this.#watch.last !== before) cancelled = this.#watch.last;
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const onProgress = call.onProgress;
    let result: Record<string, unknown>;
    try {
      result = await this.#client.callTool(
        { name: tool, arguments: (args ?? {}) as Record<string, unknown> },
        {
          timeout: call.timeoutMs,
          signal: abort.signal,
          ...(onProgress ? { onprogress: (p) => onProgress(p.progress, p.total, p.message) } : {}),
        },
      ) as Record<string, unknown>;
    } catch (err) {
      if (abort.signal.aborted) {
        if (cancelled !== undefined) this.#watch.follow(cancelled, tool, deadline);
        this.#ping(tool);
        throw new CallCancelled(tool);
      }
      throw this.#error(tool, call.timeoutMs, err);
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
    const structured = result.structuredContent;
    if (
      structured !== undefined &&
      (typeof structured !== "object" || structured === null || Array.isArray(structured))
    ) {
      throw new Error(this.#malformed(tool, "structuredContent is not an object"));
    }
    return result;
  }

  /** After a cancellation: a server that does not answer a ping within the grace is stuck. */
  #ping(tool: string): void {
    this.#client.ping({ timeout: CANCEL_GRACE_MS }).catch((err) => {
      if (!(err instanceof SdkError) || err.code !== SdkErrorCode.RequestTimeout) return;
      this.#onIgnored(
        `a call to ${tool} was cancelled and the server did not answer a ping within ` +
          `${CANCEL_GRACE_MS} ms`,
      );
    });
  }

  /** The SDK's errors as corral names them: its timeout, a malformed result. */
  #error(tool: string, timeoutMs: number, err: unknown): unknown {
    if (!(err instanceof SdkError)) return err;
    if (err.code === SdkErrorCode.RequestTimeout) return new CallTimedOut(timeoutMs);
    if (err.code === SdkErrorCode.InvalidResult) {
      const why = _issues(err.message.replace(/^Invalid result for tools\/call: /, ""));
      return new Error(this.#malformed(tool, why), { cause: err });
    }
    return err;
  }

  #malformed(tool: string, problem: string): string {
    return `server "${this.#server}" answered tools/call "${tool}" with a malformed result: ${problem}`;
  }
}

/** The SDK's schema issues (a JSON list) as one line, `path: message` each (else as they are). */
function _issues(raw: string): string {
  try {
    const issues = JSON.parse(raw) as Array<{ path?: unknown[]; message?: string }>;
    return issues.map((i) => `${(i.path ?? []).join(".") || "result"}: ${i.message}`).join("; ");
  } catch {
    return raw;
  }
}
