/**
 * Which `tools/call` runs as a task, and starting it. A tool says it may
 * (`execution.taskSupport: "optional"`) or must (`"required"`) run as one
 * (core/tool/tool.ts); a 2026-07-28 request that declares the tasks
 * extension then gets a `CreateTaskResult` at once (server-directed: the
 * client asks nothing), and the call runs on in its sandbox exactly as a
 * call does, its questions waiting in the task (`tasks/get` shows them,
 * `tasks/update` answers them). Without the extension, an optional tool
 * answers as usual and a required one is refused (`-32021`). A tool with
 * `taskAfterInput` first asks in rounds of the request
 * (`InputRequiredResult`) and becomes a task with the retry that answers.
 *
 * @module
 */
import type { InputRounds, RoundAsk } from "../_input_rounds.ts";
import { declaresTasks, tasksNotDeclared } from "./_task_methods.ts";
import type { TaskStore } from "./_task_store.ts";

/** The facts of one `tools/call` that decide whether it is a task. */
export interface TaskCall {
  /** The tool's task support and whether it asks before it becomes a task. */
  tool: { name: string; taskSupport?: string; taskAfterInput?: boolean };
  principal: string;
  /** Binds parked rounds to the call (tool and arguments). */
  key: string;
  capabilities: Record<string, unknown>;
  /** A retry's verified state (a round of this call), if any. */
  requestState?: unknown;
  inputResponses?: Record<string, unknown>;
  /** Run the call with `ask` for its questions and `signal` for its end. */
  start: (ask: RoundAsk, signal: AbortSignal) => Promise<unknown>;
  /** Hold the task as live work of the caller's credential (revoked: `end` cancels it). */
  hold?: (end: (reason: Error) => void) => () => void;
}

/**
 * The answer of a call that is a task (its `CreateTaskResult`), or
 * undefined when it runs as an ordinary call (rounds included). Throws
 * `-32021` for a required tool without the extension.
 */
export function startTask(
  call: TaskCall,
  rounds: InputRounds,
  store: TaskStore,
): Record<string, unknown> | undefined {
  const support = call.tool.taskSupport;
  if (support !== "optional" && support !== "required") return undefined;
  if (!declaresTasks(call.capabilities)) {
    if (support === "required") throw tasksNotDeclared();
    return undefined;
  }
  if (call.tool.taskAfterInput) {
    // Its first request asks in rounds; the retry that answers makes the task.
    if (call.requestState === undefined) return undefined;
    const held = rounds.adopt(
      call.requestState,
      call.principal,
      call.key,
      call.capabilities,
      call.inputResponses,
    );
    return store.create(call.principal, call.tool.name, held, call.hold);
  }
  const held = rounds.detach(call.principal, call.key, call.capabilities, call.start);
  return store.create(call.principal, call.tool.name, held, call.hold);
}
