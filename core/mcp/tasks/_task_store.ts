/**
 * The tasks of one instance (tasks extension, `io.modelcontextprotocol/tasks`):
 * each is one call running without a request waiting for it, held for the
 * principal that made it. A task id is a random UUID, and a task is found
 * only with its principal: another caller's id is unknown here (`-32602`),
 * exactly like an id never made, so it can be neither read, answered nor
 * cancelled. Bounded: at most {@link MAX_TASKS_PER_PRINCIPAL} per principal
 * (the oldest ended one gives way; with none ended, no new task), and each
 * is forgotten {@link TASK_TTL_MS} after it was made (a task still running
 * then is cancelled first).
 *
 * A task's status follows its call: `working`, `input_required` while a
 * question waits (its `inputRequests`), then `completed` with the call's
 * result (a tool's own failure too: `isError`), `failed` with a JSON-RPC
 * error (corral's faults: a throw, a crash, a timeout, a question the
 * client could not take), or `cancelled`. Each change of status is told
 * to the store's watchers with the task as `tasks/get` shows it (the
 * extension's `notifications/tasks`, ./_task_listen.ts).
 *
 * @module
 */
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import { callFault } from "../_call_result.ts";
import type { ParkedCall } from "../_input_rounds.ts";

/** How long a task is kept after it was made (its `ttlMs`). */
export const TASK_TTL_MS = 60 * 60_000;
/** Tasks one principal holds at once, ended ones included until they give way. */
export const MAX_TASKS_PER_PRINCIPAL = 32;
/** How often a client is asked to poll (`pollIntervalMs`). */
export const POLL_INTERVAL_MS = 500;

/** A task's status on the wire. */
export type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

/** True for a status a task never leaves (`completed`, `failed`, `cancelled`). */
export function isEnded(status: unknown): boolean {
  return status === "completed" || status === "failed" || status === "cancelled";
}

interface _Task {
  id: string;
  principal: string;
  tool: string;
  createdAt: number;
  updatedAt: number;
  call: ParkedCall;
  /** Set once the task ended. */
  ended?: { status: "completed" | "failed" | "cancelled"; result?: unknown; error?: unknown };
  /** The status last shown, to date `lastUpdatedAt`. */
  shown: TaskStatus;
}

/** Told each change of a task's status: its principal, and the task as `tasks/get` shows it. */
export type TaskWatcher = (principal: string, task: Record<string, unknown>) => void;

/** The tasks of every principal of one instance. */
export class TaskStore {
  readonly #tasks = new Map<string, _Task>();
  readonly #watchers = new Set<TaskWatcher>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /**
   * Hold `call` (already running) as a new task of `principal`; its
   * `CreateTaskResult`. A principal with {@link MAX_TASKS_PER_PRINCIPAL}
   * tasks running is refused (`-32603`, saying why) and the call is cancelled.
   * `hold` keeps the task as live work of its caller's credential until it ends.
   */
  create(
    principal: string,
    tool: string,
    call: ParkedCall,
    hold?: (end: (reason: Error) => void) => () => void,
  ): Record<string, unknown> {
    this.#sweep();
    if (!this.#room(principal)) {
      call.cancel(new Error("too many tasks"));
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `Cannot run tool "${tool}" as a task: ${MAX_TASKS_PER_PRINCIPAL} tasks of this caller ` +
          "are running; wait for one to end or cancel one (tasks/cancel)",
      );
    }
    const now = this.#now();
    const task: _Task = {
      id: crypto.randomUUID(),
      principal,
      tool,
      createdAt: now,
      updatedAt: now,
      call,
      shown: "working",
    };
    this.#tasks.set(task.id, task);
    // A question asked or answered: `input_required` and back.
    call.onChange(() => this.#changed(task));
    // Its caller's credential revoked: the task is cancelled like the caller's other calls.
    const unhold = hold?.((reason) => this.#stop(task, reason));
    call.done.then(
      (value) => this.#end(task, _outcome(value, call)),
      (err) => this.#end(task, { status: "failed", error: _rpcError(err) }),
    ).finally(() => unhold?.());
    return { resultType: "task", ...this.#base(task, "working") };
  }

  /** The task `id` of `principal`, as `tasks/get` shows it; unknown (or another's): -32602. */
  get(principal: string, id: unknown): Record<string, unknown> {
    return this.#view(this.#find(principal, id));
  }

  /** True when `id` names a task of `principal` (a task of another's is no task here). */
  owns(principal: string, id: unknown): boolean {
    const task = typeof id === "string" ? this.#tasks.get(id) : undefined;
    return task?.principal === principal;
  }

  /** True when `id` names a task here (a store of one connection's: its tasks alone). */
  has(id: string): boolean {
    return this.#tasks.has(id);
  }

  /** The task `id` as `tasks/get` shows it, whoever holds it; undefined when there is none. */
  view(id: string): Record<string, unknown> | undefined {
    const task = this.#tasks.get(id);
    return task && this.#view(task);
  }

  /** Call `fn` on each change of any task's status from now on; returns how to stop. */
  watch(fn: TaskWatcher): () => void {
    this.#watchers.add(fn);
    return () => this.#watchers.delete(fn);
  }

  #view(task: _Task): Record<string, unknown> {
    const status = this.#status(task);
    const out: Record<string, unknown> = this.#base(task, status);
    if (status === "input_required") out.inputRequests = task.call.questions();
    if (task.ended?.status === "completed") out.result = task.ended.result;
    if (task.ended?.status === "failed") {
      out.error = task.ended.error;
      out.statusMessage = String((task.ended.error as { message?: unknown }).message ?? "");
    }
    return out;
  }

  /** Answer open questions of the task (`tasks/update`); other keys are ignored. */
  update(principal: string, id: unknown, responses: Record<string, unknown> | undefined): void {
    const task = this.#find(principal, id);
    if (!task.ended) task.call.answer(responses);
  }

  /**
   * Cancel the task (`tasks/cancel`): its call is stopped as a cancelled
   * call is (its sandbox call ends), and it shows `cancelled`. An ended
   * task stays as it ended.
   */
  cancel(principal: string, id: unknown): void {
    this.#stop(this.#find(principal, id), new Error("the task was cancelled (tasks/cancel)"));
  }

  #stop(task: _Task, why: Error): void {
    if (task.ended) return;
    task.ended = { status: "cancelled" };
    task.updatedAt = this.#now();
    task.call.cancel(why);
    this.#changed(task);
  }

  /** Tell the watchers when the task's status is not the one last shown. */
  #changed(task: _Task): void {
    const before = task.shown;
    if (this.#status(task) === before || !this.#watchers.size) return;
    const view = this.#view(task);
    for (const fn of this.#watchers) {
      try {
        fn(task.principal, view);
      } catch { /* a watcher's failure is its own */ }
    }
  }

  /** Tasks held now (every principal; for tests). */
  get size(): number {
    return this.#tasks.size;
  }

  #find(principal: string, id: unknown): _Task {
    this.#sweep();
    const task = typeof id === "string" ? this.#tasks.get(id) : undefined;
    // Another principal's task is not found either: the same answer as an id never made.
    if (!task || task.principal !== principal) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        "Failed to retrieve task: Task not found (unknown, expired, or not this caller's)",
      );
    }
    return task;
  }

  #status(task: _Task): TaskStatus {
    const status = task.ended?.status ??
      (Object.keys(task.call.questions()).length ? "input_required" : "working");
    if (status !== task.shown) {
      task.shown = status;
      task.updatedAt = Math.max(task.updatedAt, this.#now());
    }
    return status;
  }

  #base(task: _Task, status: TaskStatus): Record<string, unknown> {
    return {
      taskId: task.id,
      status,
      createdAt: new Date(task.createdAt).toISOString(),
      lastUpdatedAt: new Date(task.updatedAt).toISOString(),
      ttlMs: TASK_TTL_MS,
      pollIntervalMs: POLL_INTERVAL_MS,
    };
  }

  #end(task: _Task, ended: NonNullable<_Task["ended"]>): void {
    if (task.ended) return; // cancelled first: what the call did after is not its result
    task.ended = ended;
    task.updatedAt = this.#now();
    this.#changed(task);
  }

  /** Room for one more task of `principal`: the oldest ended one gives way if need be. */
  #room(principal: string): boolean {
    const own = [...this.#tasks.values()].filter((t) => t.principal === principal);
    if (own.length < MAX_TASKS_PER_PRINCIPAL) return true;
    const ended = own.find((t) => t.ended);
    if (!ended) return false;
    this.#tasks.delete(ended.id);
    return true;
  }

  /** Forget the tasks past their TTL (a running one is cancelled first). */
  #sweep(): void {
    const now = this.#now();
    for (const task of this.#tasks.values()) {
      if (now - task.createdAt < TASK_TTL_MS) continue;
      if (!task.ended) task.call.cancel(new Error("the task expired"));
      this.#tasks.delete(task.id);
    }
  }
}

/**
 * What a call's settled value makes of its task: corral's fault (`error`:
 * a throw, a crash, a timeout) or a question the client could not take is
 * `failed`; any other result, a tool's own failure included, `completed`.
 */
function _outcome(value: unknown, call: ParkedCall): NonNullable<_Task["ended"]> {
  const result = value as { isError?: boolean; content?: unknown } | undefined;
  const missing = call.missing();
  if (missing && result?.isError) {
    return {
      status: "failed",
      error: {
        code: -32021,
        message: "Missing required client capability",
        data: { requiredCapabilities: missing },
      },
    };
  }
  const fault = callFault(value);
  if (fault?.outcome === "error") {
    const structured = (value as { structuredContent?: { error?: unknown } }).structuredContent;
    return {
      status: "failed",
      error: {
        code: ProtocolErrorCode.InternalError,
        message: String(structured?.error ?? "the call failed"),
        data: { reason: fault.reason },
      },
    };
  }
  return { status: "completed", result: value };
}

/** A thrown error as the JSON-RPC error of a failed task. */
function _rpcError(err: unknown): Record<string, unknown> {
  if (err instanceof ProtocolError) {
    return { code: err.code, message: err.message, ...(err.data ? { data: err.data } : {}) };
  }
  return {
    code: ProtocolErrorCode.InternalError,
    message: err instanceof Error ? err.message : String(err),
  };
}
