/**
 * The MCP SDK transport between corral and one hosted server's stdio, with
 * the checks a hostile server meets before the SDK sees anything:
 *
 * - a message longer than {@link MAX_MESSAGE_BYTES} is refused without being
 *   buffered whole (the rest of its line is skipped as it arrives);
 * - a line that is not a JSON-RPC message is dropped, unless it answers a
 *   request corral sent and that is still open: that request then fails at
 *   once, naming what is malformed, instead of waiting for its timeout;
 * - a response whose id corral never sent (or already answered) is dropped;
 * - a late answer to a request corral cancelled, and progress on it, are
 *   the {@link ChannelOptions.watch}'s (./_cancel_watch.ts): never delivered;
 * - notifications and requests from the server beyond a rate
 *   ({@link FLOOD_BURST}, then {@link FLOOD_PER_SECOND} a second) are dropped;
 * - its stderr and its log notifications are bounded in bytes, per second
 *   and per session (./_output_budget.ts): what is over is dropped.
 *
 * Each refusal is reported through `onEvent` (the audit log), at most once
 * a second per kind with a count. A {@link CallLane} given in the options
 * gets the responses and progress of its own `tools/call` requests before
 * the SDK (and without its second parse); what it does not own goes on as
 * above, so a response to an id neither it nor the SDK sent stays forged.
 * The channel speaks the SDK 2.x `Transport` (`@modelcontextprotocol/client`).
 *
 * @module
 */
import {
  type JSONRPCMessage,
  parseJSONRPCMessage,
  specTypeSchemas,
  type Transport,
} from "@modelcontextprotocol/client";
import type { CallLane } from "./call_lane.ts";
import type { CancelWatch } from "./_cancel_watch.ts";
import { OutputBudget } from "./_output_budget.ts";

/** The largest message accepted from a server (16 MiB). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
/** Notifications and requests a server may send at once. */
export const FLOOD_BURST = 500;
/** ... and then per second. */
export const FLOOD_PER_SECOND = 200;

const _ENCODER = new TextEncoder();

/** What a server did that was refused. */
export type ChannelEventKind = "oversized" | "garbage" | "forged" | "flood" | "output";

/** The byte budgets of a server's stderr and log notifications (kept across its restarts). */
export interface OutputBudgets {
  stderr: OutputBudget;
  log: OutputBudget;
}

/** Options of a {@link StdioChannel}. */
export interface ChannelOptions {
  /** A refusal (already rate-limited: once a second per kind, with a count). */
  onEvent(kind: ChannelEventKind, detail: string, count: number): void;
  /** A line of the server's stderr. */
  onStderr(line: string): void;
  maxMessageBytes?: number;
  /** The lane of corral's own `tools/call` requests, written through {@link StdioChannel.write}. */
  lane?: CallLane;
  /** Bytes of stderr and log notifications it may still send (default: fresh budgets). */
  output?: OutputBudgets;
  /** Told of each `notifications/cancelled` sent; owns the late answers and progress of those. */
  watch?: CancelWatch;
}

/** The SDK transport over a child's stdin/stdout. */
export class StdioChannel implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** How many messages were accepted (the first good answer means the server speaks MCP). */
  accepted = 0;
  readonly #child: Deno.ChildProcess;
  readonly #options: ChannelOptions;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #pending = new Set<string | number>();
  #tokens = FLOOD_BURST;
  #refill = performance.now();
  #counts = new Map<ChannelEventKind, { n: number; last: number }>();
  #closed = false;
  readonly #output: OutputBudgets;

  constructor(child: Deno.ChildProcess, options: ChannelOptions) {
    this.#child = child;
    this.#options = options;
    this.#writer = child.stdin.getWriter();
    this.#output = options.output ?? { stderr: new OutputBudget(), log: new OutputBudget() };
  }

  start(): Promise<void> {
    const max = this.#options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
    void _lines(this.#child.stdout, max, (line) => this.#line(line), () => {
      this.#event("oversized", `a message over ${max} bytes was refused`);
    }).finally(() => this.close());
    // Its stderr is for the operator: lines beyond the same rate are dropped too.
    let tokens = FLOOD_BURST, refill = performance.now();
    void _lines(this.#child.stderr, 65_536, (l) => {
      const now = performance.now();
      tokens = Math.min(FLOOD_BURST, tokens + (now - refill) * FLOOD_PER_SECOND / 1000);
      refill = now;
      if (tokens < 1) {
        this.#event("flood", `stderr lines dropped: over ${FLOOD_PER_SECOND} a second`);
        return;
      }
      tokens--;
      if (!this.#output.stderr.take(l.length + 1)) {
        this.#event("output", _overBudget("stderr", this.#output.stderr));
        return;
      }
      this.#options.onStderr(l);
    }, () => {});
    return Promise.resolve();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new Error("the server's connection is closed");
    const m = message as {
      id?: string | number;
      method?: string;
      params?: { requestId?: unknown };
    };
    if (m.method !== undefined && m.id !== undefined) this.#pending.add(m.id);
    else if (m.method === "notifications/cancelled") this.#cancelled(m.params?.requestId);
    await this.#writer.write(_ENCODER.encode(JSON.stringify(message) + "\n"));
  }

  /** Write one line as it is (the lane's messages: it tracks its own ids). */
  async write(line: string): Promise<void> {
    if (this.#closed) throw new Error("the server's connection is closed");
    await this.#writer.write(_ENCODER.encode(line));
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#writer.close().catch(() => {});
    this.#options.lane?.close();
    this.#options.watch?.close();
    this.onclose?.();
    return Promise.resolve();
  }

  #line(line: string): void {
    if (!line.trim()) return;
    let msg: JSONRPCMessage;
    let value: unknown;
    try {
      value = JSON.parse(line);
      if (this.#options.lane && this.#laneTook(this.#options.lane, value)) return;
      msg = _jsonRpc(value);
    } catch {
      if (this.#malformedAnswer(value)) return;
      this.#event("garbage", `not a JSON-RPC message: ${JSON.stringify(line.slice(0, 80))}`);
      return;
    }
    const m = msg as { id?: string | number; method?: string; params?: Record<string, unknown> };
    const watch = this.#options.watch;
    if (m.method === undefined) {
      // A late answer to a request corral cancelled: dropped quietly.
      if (watch?.answered(m.id)) return;
      // A response: only to a request corral sent and that is still open.
      if (m.id === undefined || !this.#pending.delete(m.id)) {
        this.#event("forged", `a response to id ${JSON.stringify(m.id)}, which corral never sent`);
        return;
      }
    } else if (!this.#take()) {
      this.#event("flood", `${m.method} dropped: over ${FLOOD_PER_SECOND} messages a second`);
      return;
    } else if (m.method === "notifications/message" && !this.#output.log.take(line.length)) {
      this.#event("output", _overBudget("log notifications", this.#output.log));
      return;
    } else if (m.method === "notifications/progress" && watch?.progress(m.params?.progressToken)) {
      // Progress on a request corral cancelled: seen by the watch, never delivered.
      this.accepted++;
      return;
    }
    this.accepted++;
    this.#deliver(msg);
  }

  /**
   * Hand `msg` to the SDK. A response goes one microtask later: the SDK runs
   * a notification's handler a microtask after it gets it, and drops a
   * request's progress handler as its response arrives, so the progress a
   * server sends just before its answer (in the same read) still reaches
   * the call.
   */
  #deliver(msg: JSONRPCMessage): void {
    if ((msg as { method?: unknown }).method !== undefined) this.onmessage?.(msg);
    else queueMicrotask(() => this.onmessage?.(msg));
  }

  /** A `notifications/cancelled` for `id` went out: its answer is the watch's now. */
  #cancelled(id: unknown): void {
    if (typeof id !== "string" && typeof id !== "number") return;
    this.#pending.delete(id);
    this.#options.watch?.sent(id);
  }

  /**
   * A JSON object without a method that is no valid JSON-RPC response, with
   * the id of an open request: that request fails at once (the SDK gets an
   * error response for it) instead of waiting for its timeout. True when so.
   */
  #malformedAnswer(value: unknown): boolean {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
    const { id, method } = value as { id?: unknown; method?: unknown };
    if (method !== undefined || (typeof id !== "string" && typeof id !== "number")) return false;
    if (!this.#pending.delete(id)) return false;
    this.accepted++;
    const message = `the server answered with a malformed JSON-RPC response: ${
      _envelopeProblem(value as Record<string, unknown>)
    }`;
    this.#deliver({ jsonrpc: "2.0", id, error: { code: -32603, message } });
    return true;
  }

  /**
   * Whether the lane took `value`: a response to one of its ids, or a
   * progress notification with one of its tokens (within the flood budget).
   */
  #laneTook(lane: CallLane, value: unknown): boolean {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
    const m = value as Record<string, unknown>;
    if (m.method === undefined) {
      if (!lane.response(m)) return false;
    } else if (
      m.method !== "notifications/progress" || m.id !== undefined || m.jsonrpc !== "2.0" ||
      !lane.owns((m.params as { progressToken?: unknown } | undefined)?.progressToken)
    ) {
      return false;
    } else if (!this.#take()) {
      this.#event("flood", `${m.method} dropped: over ${FLOOD_PER_SECOND} messages a second`);
      return true;
    } else {
      lane.progress(m.params as Record<string, unknown>);
    }
    this.accepted++;
    return true;
  }

  /** A token of the notification/request budget, if any is left. */
  #take(): boolean {
    const now = performance.now();
    this.#tokens = Math.min(
      FLOOD_BURST,
      this.#tokens + (now - this.#refill) * FLOOD_PER_SECOND / 1000,
    );
    this.#refill = now;
    if (this.#tokens < 1) return false;
    this.#tokens--;
    return true;
  }

  #event(kind: ChannelEventKind, detail: string): void {
    const c = this.#counts.get(kind) ?? { n: 0, last: -Infinity };
    c.n++;
    this.#counts.set(kind, c);
    const now = performance.now();
    if (now - c.last < 1000) return;
    c.last = now;
    this.#options.onEvent(kind, detail, c.n);
  }
}

/** What is wrong with a response's JSON-RPC envelope (strict, as the SDK's schemas are). */
function _envelopeProblem(m: Record<string, unknown>): string {
  if (m.jsonrpc !== "2.0") return `jsonrpc is not "2.0"`;
  const extra = Object.keys(m).find((k) => !["jsonrpc", "id", "result", "error"].includes(k));
  if (extra !== undefined) return `unknown member "${extra}"`;
  if ((m.result === undefined) === (m.error === undefined)) {
    return "it needs either result or error";
  }
  if (m.error !== undefined) return "error needs an integer code and a string message";
  const r = m.result;
  if (typeof r !== "object" || r === null || Array.isArray(r)) return "result is not an object";
  return "result._meta is not an object";
}

/** Why output was dropped: which bound, and how much so far. */
function _overBudget(what: string, b: OutputBudget): string {
  const l = b.limits;
  const bound = b.exhausted
    ? `over ${l.perSession} bytes in this session`
    : `over ${l.perSecond} bytes a second (bursts of ${l.burst})`;
  return `${what} dropped: ${bound}; ${b.dropped} bytes dropped`;
}

/**
 * The SDK's `parseJSONRPCMessage`, the same answer for every value, cheaper
 * for a response: its union tries a request, a notification, a result and
 * an error in turn; the first two require a string `method`, so without one
 * only the last two (the SDK's `JSONRPCResponse` schema, in the same order)
 * can match.
 */
function _jsonRpc(value: unknown): JSONRPCMessage {
  const noMethod = typeof value === "object" && value !== null && !Array.isArray(value) &&
    (value as { method?: unknown }).method === undefined;
  if (!noMethod) return parseJSONRPCMessage(value);
  const checked = _RESPONSE.validate(value);
  if (checked instanceof Promise || checked.issues) throw new TypeError("not a JSON-RPC response");
  return checked.value as JSONRPCMessage;
}

const _RESPONSE = specTypeSchemas.JSONRPCResponse["~standard"];

/**
 * Read `stream` line by line; a line longer than `max` is never held:
 * `onOversized` is called and the rest of it skipped as it arrives.
 */
async function _lines(
  stream: ReadableStream<Uint8Array>,
  max: number,
  onLine: (line: string) => void,
  onOversized: () => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let parts: string[] = [];
  let size = 0;
  let skipping = false;
  // One buffer, read into again and again: a flood of bytes allocates nothing per chunk.
  const reader = stream.getReader({ mode: "byob" });
  let space = new Uint8Array(65_536);
  try {
    for (;;) {
      const { value: chunk, done } = await reader.read(space);
      if (done || !chunk) break;
      space = new Uint8Array(chunk.buffer);
      let start = 0;
      while (start <= chunk.length) {
        const nl = chunk.indexOf(10, start);
        const end = nl < 0 ? chunk.length : nl;
        if (!skipping) {
          size += end - start;
          if (size > max) {
            skipping = true;
            parts = [];
            onOversized();
          } else if (end > start) {
            parts.push(decoder.decode(chunk.subarray(start, end), { stream: true }));
          }
        }
        if (nl < 0) break;
        if (!skipping) onLine(parts.join(""));
        parts = [];
        size = 0;
        skipping = false;
        start = nl + 1;
      }
    }
  } catch { /* closed */ }
  if (parts.length && !skipping) onLine(parts.join(""));
}
