/**
 * `subscriptions/listen` with the tasks extension's `taskIds` on a
 * 2026-07-28 stdio connection (../_stdio_modern.ts). The SDK's stdio entry
 * keeps the connection's subscriptions and knows no task, so the request
 * reaches it without `taskIds` (it acknowledges and delivers the list
 * changes asked for), its acknowledgement is given the task ids honoured,
 * and `notifications/tasks` for those tasks are written here, stamped with
 * the same subscription id: each task's status right after the
 * acknowledgement, then every change, as `tasks/get` shows it. Only the
 * connection's own tasks are honoured (its store is its own). A
 * `notifications/cancelled` for the subscription ends it here too.
 *
 * @module
 */
import { MAX_LISTEN_TASKS, SUBSCRIPTION_ID_KEY } from "./_task_listen.ts";
import { declaresTasks } from "./_task_methods.ts";
import { isEnded, type TaskStore } from "./_task_store.ts";

const _CAPS = "io.modelcontextprotocol/clientCapabilities";
/** Subscriptions with tasks one connection holds at once (the SDK's own bound on all of them). */
const _MAX_SUBSCRIPTIONS = 1024;

type _Id = string | number;

/** The task side of one stdio connection's subscriptions. */
export class StdioTaskListen {
  /** Subscription id → its tasks not yet ended, until acknowledged (`pending`). */
  readonly #subs = new Map<_Id, { tasks: Set<string>; pending: boolean }>();
  readonly #unwatch: () => void;

  /** `store` holds the connection's tasks; `write` sends one message to the client. */
  constructor(readonly store: TaskStore, readonly write: (message: unknown) => void) {
    this.#unwatch = store.watch((_principal, task) => {
      for (const [id, sub] of this.#subs) {
        if (!sub.pending && sub.tasks.has(String(task.taskId))) this.#note(id, sub.tasks, task);
      }
    });
  }

  /**
   * A line from the client, as the SDK is to see it: a listen request
   * naming tasks loses `taskIds` (kept here); others pass as they are.
   */
  inbound(line: string): string {
    if (!line.includes("taskIds") && !line.includes("notifications/cancelled")) return line;
    let m: Record<string, unknown> & { params?: Record<string, unknown> };
    try {
      m = JSON.parse(line);
    } catch {
      return line;
    }
    if (m?.method === "notifications/cancelled") {
      this.#subs.delete(m.params?.requestId as _Id);
      return line;
    }
    const filter = m?.params?.notifications as Record<string, unknown> | undefined;
    if (m?.method !== "subscriptions/listen" || !filter || !("taskIds" in filter)) return line;
    const ids = Array.isArray(filter.taskIds) ? filter.taskIds : [];
    const { taskIds: _, ...rest } = filter;
    const declared = declaresTasks(
      (m.params?._meta as Record<string, unknown> | undefined)?.[_CAPS],
    );
    const own = ids.length <= MAX_LISTEN_TASKS && declared
      ? [...new Set(ids)].filter((id) => typeof id === "string" && this.store.has(id)) as string[]
      : [];
    const room = this.#subs.size < _MAX_SUBSCRIPTIONS;
    if (own.length && room && (typeof m.id === "string" || typeof m.id === "number")) {
      this.#subs.set(m.id, { tasks: new Set(own), pending: true });
    }
    const end = line.endsWith("\n") ? "\n" : "";
    return JSON.stringify({ ...m, params: { ...m.params, notifications: rest } }) + end;
  }

  /**
   * A message the SDK writes to the client, as the client is to get it:
   * the acknowledgement of a subscription with tasks names them, and their
   * status follows it.
   */
  outbound(message: Record<string, unknown>, send: (m: unknown) => void): void {
    const params = message.params as Record<string, Record<string, unknown>> | undefined;
    const id = params?._meta?.[SUBSCRIPTION_ID_KEY] as _Id | undefined;
    const sub = id === undefined ? undefined : this.#subs.get(id);
    if (message.method !== "notifications/subscriptions/acknowledged" || !sub?.pending) {
      return send(message);
    }
    sub.pending = false;
    const notifications = { ...params!.notifications, taskIds: [...sub.tasks] };
    send({ ...message, params: { ...params, notifications } });
    for (const taskId of [...sub.tasks]) this.#note(id!, sub.tasks, this.store.view(taskId));
  }

  /** Stop watching. */
  close(): void {
    this.#unwatch();
    this.#subs.clear();
  }

  #note(id: _Id, tasks: Set<string>, task: Record<string, unknown> | undefined): void {
    if (!task) return;
    const params = { ...task, _meta: { [SUBSCRIPTION_ID_KEY]: id } };
    this.write({ jsonrpc: "2.0", method: "notifications/tasks", params });
    if (isEnded(task.status)) tasks.delete(String(task.taskId));
  }
}
