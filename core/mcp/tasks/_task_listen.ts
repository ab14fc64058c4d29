/**
 * `subscriptions/listen` with the tasks extension's `taskIds` (2026-07-28
 * over HTTP): the extension's status notifications. The v2 SDK's listen
 * router carries the four list-change events only, so a listen request
 * whose filter names tasks is served here, whole: its list-change fields
 * as the SDK would (honoured where the server advertises them, from the
 * same event bus), and `notifications/tasks` for each named task that is
 * the caller's, carrying the task as `tasks/get` shows it (a missed one
 * costs nothing). A task id that is not the caller's is left out of the
 * acknowledgement, exactly like one never made. Right after the
 * acknowledgement each named task's status is sent once (it may have
 * changed before the stream opened); when every named task has ended and
 * nothing else is listened for, the stream ends gracefully.
 *
 * @module
 */
import type { ServerEventBus } from "@modelcontextprotocol/server";
import { z } from "zod";
import { isEnded, type TaskStore } from "./_task_store.ts";

/** Where a notification of a subscription carries its id (`_meta`). */
export const SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId";
const _SERVER_INFO = "io.modelcontextprotocol/serverInfo";
const _KEEPALIVE_MS = 15_000;
/** Task ids one listen request may name. */
export const MAX_LISTEN_TASKS = 64;

const _filter = z.object({
  toolsListChanged: z.boolean().optional(),
  promptsListChanged: z.boolean().optional(),
  resourcesListChanged: z.boolean().optional(),
  resourceSubscriptions: z.array(z.string()).optional(),
  taskIds: z.array(z.string().max(200)).max(MAX_LISTEN_TASKS),
}).passthrough();

type _Filter = z.infer<typeof _filter>;
type _Event = { kind: string; uri?: string; params?: Record<string, unknown> };

/** What serving one task listen needs. */
export interface TaskListenOptions {
  store: TaskStore;
  principal: string;
  /** The server's capabilities: list-change fields are honoured only where advertised. */
  capabilities: {
    tools?: { listChanged?: boolean };
    prompts?: { listChanged?: boolean };
    resources?: { listChanged?: boolean; subscribe?: boolean };
  };
  /** The list-change events of the SDK's handler. */
  bus: ServerEventBus;
  serverInfo: { name: string; version: string };
  /** Aborts when the client goes away. */
  signal?: AbortSignal;
  /** Ends the stream when the caller's credential is revoked; returns how to let go. */
  hold?: (end: () => void) => () => void;
  /** Called once when the stream ends, however it ends. */
  onEnd?: () => void;
}

/** True when `message` is a `subscriptions/listen` request whose filter names tasks. */
export function isTaskListen(message: unknown): boolean {
  const m = message as {
    id?: unknown;
    method?: unknown;
    params?: { notifications?: { taskIds?: unknown } };
  };
  return m?.method === "subscriptions/listen" &&
    (typeof m.id === "string" || typeof m.id === "number") &&
    m.params?.notifications?.taskIds !== undefined;
}

/**
 * The SSE response of a task listen request `message` (a JSON-RPC error
 * answer when its filter is malformed).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InMemoryServerEventBus } from "@modelcontextprotocol/server";
 * import { serveTaskListen } from "./_task_listen.ts";
 * import { TaskStore } from "./_task_store.ts";
 * const res = serveTaskListen(
 *   { id: 7, method: "subscriptions/listen", params: { notifications: { taskIds: ["x"] } } },
 *   { store: new TaskStore(), principal: "p", capabilities: {}, bus: new InMemoryServerEventBus(),
 *     serverInfo: { name: "corral", version: "0" } },
 * );
 * const text = await res.text(); // nothing of its own to watch: acknowledged, then ended
 * assert.match(text, /"notifications\/subscriptions\/acknowledged"/);
 * assert.match(text, /"notifications":\{\}/);
 * ```
 */
export function serveTaskListen(
  message: { id: string | number; method?: string; params?: { notifications?: unknown } },
  options: TaskListenOptions,
): Response {
  const parsed = _filter.safeParse(message.params?.notifications);
  if (!parsed.success) {
    options.onEnd?.();
    return Response.json({
      jsonrpc: "2.0",
      id: message.id,
      error: {
        code: -32602,
        message: `Invalid params: notifications.taskIds must be at most ${MAX_LISTEN_TASKS} ` +
          `task ids (${parsed.error.issues[0]?.path.join(".") || "notifications"}: ` +
          `${parsed.error.issues[0]?.message})`,
      },
    });
  }
  const honored = _honored(parsed.data, options);
  const stream = new _ListenStream(message.id, honored, options);
  return new Response(stream.readable, {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
    },
  });
}

/** The part of `f` this server delivers: advertised list changes, the caller's own tasks. */
function _honored(f: _Filter, o: TaskListenOptions): Record<string, unknown> {
  const caps = o.capabilities;
  const out: Record<string, unknown> = {};
  if (f.toolsListChanged && caps.tools?.listChanged) out.toolsListChanged = true;
  if (f.promptsListChanged && caps.prompts?.listChanged) out.promptsListChanged = true;
  if (f.resourcesListChanged && caps.resources?.listChanged) out.resourcesListChanged = true;
  if (f.resourceSubscriptions?.length && caps.resources?.subscribe) {
    out.resourceSubscriptions = [...f.resourceSubscriptions];
  }
  const own = [...new Set(f.taskIds)].filter((id) => o.store.owns(o.principal, id));
  if (own.length) out.taskIds = own;
  return out;
}

/** One open listen stream. */
class _ListenStream {
  readonly readable: ReadableStream<Uint8Array>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #closed = false;
  readonly #undo: Array<() => void> = [];
  /** Named tasks not yet ended. */
  readonly #open: Set<string>;

  constructor(
    readonly id: string | number,
    readonly honored: Record<string, unknown>,
    readonly o: TaskListenOptions,
  ) {
    this.#open = new Set((honored.taskIds as string[] | undefined) ?? []);
    this.readable = new ReadableStream({
      start: (c) => {
        this.#controller = c;
        this.#start();
      },
      cancel: () => this.#end(false),
    });
  }

  #start(): void {
    this.#send("notifications/subscriptions/acknowledged", { notifications: this.honored });
    for (const id of [...this.#open]) {
      try {
        this.#task(this.o.store.get(this.o.principal, id));
      } catch {
        this.#open.delete(id); // expired meanwhile
      }
    }
    if (this.#done()) return this.#end(true);
    this.#undo.push(this.o.store.watch((principal, task) => {
      if (principal === this.o.principal && this.#open.has(String(task.taskId))) this.#task(task);
      if (this.#done()) this.#end(true);
    }));
    this.#undo.push(this.o.bus.subscribe((e) => this.#event(e as _Event)));
    const keep = setInterval(() => this.#write(": keepalive\n\n"), _KEEPALIVE_MS);
    this.#undo.push(() => clearInterval(keep));
    const signal = this.o.signal;
    if (signal) {
      const abort = () => this.#end(false);
      if (signal.aborted) return abort();
      signal.addEventListener("abort", abort, { once: true });
      this.#undo.push(() => signal.removeEventListener("abort", abort));
    }
    if (this.o.hold) this.#undo.push(this.o.hold(() => this.#end(false)));
  }

  /** Nothing more to deliver: every named task ended and no list change is listened for. */
  #done(): boolean {
    return this.#open.size === 0 &&
      Object.keys(this.honored).every((k) => k === "taskIds");
  }

  #task(task: Record<string, unknown>): void {
    this.#send("notifications/tasks", task);
    if (isEnded(task.status)) this.#open.delete(String(task.taskId));
  }

  #event(e: _Event): void {
    const h = this.honored;
    const wanted: Record<string, [boolean, string]> = {
      tools_list_changed: [h.toolsListChanged === true, "notifications/tools/list_changed"],
      prompts_list_changed: [h.promptsListChanged === true, "notifications/prompts/list_changed"],
      resources_list_changed: [
        h.resourcesListChanged === true,
        "notifications/resources/list_changed",
      ],
      resource_updated: [
        (h.resourceSubscriptions as string[] | undefined)?.includes(e.uri ?? "") ?? false,
        "notifications/resources/updated",
      ],
    };
    const [yes, method] = wanted[e.kind] ?? [false, ""];
    if (!yes) return;
    this.#send(method, { ...e.params, ...(e.uri ? { uri: e.uri } : {}) });
  }

  #send(method: string, params: Record<string, unknown>): void {
    const meta = { ...(params._meta as object | undefined), [SUBSCRIPTION_ID_KEY]: this.id };
    const note = { jsonrpc: "2.0", method, params: { ...params, _meta: meta } };
    this.#write(`event: message\ndata: ${JSON.stringify(note)}\n\n`);
  }

  #write(frame: string): void {
    if (this.#closed) return;
    try {
      this.#controller.enqueue(new TextEncoder().encode(frame));
    } catch { /* the client went away */ }
  }

  /** End the stream; `graceful`: with the listen request's empty result first. */
  #end(graceful: boolean): void {
    if (this.#closed) return;
    if (graceful) {
      const meta = { [SUBSCRIPTION_ID_KEY]: this.id, [_SERVER_INFO]: this.o.serverInfo };
      this.#write(
        `event: message\ndata: ${
          JSON.stringify({
            jsonrpc: "2.0",
            id: this.id,
            result: { resultType: "complete", _meta: meta },
          })
        }\n\n`,
      );
    }
    this.#closed = true;
    for (const undo of this.#undo.splice(0)) undo();
    this.o.onEnd?.();
    try {
      this.#controller.close();
    } catch { /* closed */ }
  }
}
