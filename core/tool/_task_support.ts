/**
 * A tool's MCP task support (tasks extension, 2026-07-28; core/mcp/tasks/):
 * a call of a tool that says `optional` or `required` runs as a task for a
 * client that declares the extension on its request; `required` refuses a
 * client that does not (`-32021`). Default: never a task.
 *
 * @module
 */

/** MCP's `execution.taskSupport`. */
export type TaskSupport = "optional" | "required" | "forbidden";

/** The task fields of a class tool's options and of every tool definition. */
export interface TaskFields {
  /** Whether a call may (`optional`) or must (`required`) run as an MCP task. */
  taskSupport?: TaskSupport;
  /** With `taskSupport`: its first questions are rounds of the request; then it becomes a task. */
  taskAfterInput?: boolean;
}

/** The task fields of a module tool's config (`TOOL_CONFIGS`). */
export interface TaskConfigFields {
  /** MCP `execution.taskSupport`: may (`optional`) or must (`required`) run as a task. */
  task_support?: TaskSupport;
  /** With `task_support`: ask the first questions as rounds of the request, then become a task. */
  task_after_input?: boolean;
}

/**
 * The task fields of tool `name`, checked: a value that is not MCP's is a
 * load error naming the tool.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { taskOptions } from "./_task_support.ts";
 * assert.deepEqual(taskOptions("T", "optional", undefined), { taskSupport: "optional" });
 * assert.throws(() => taskOptions("T", "often", undefined), /tool "T": task support/);
 * ```
 */
export function taskOptions(name: unknown, support: unknown, afterInput: unknown): TaskFields {
  if (support === undefined && afterInput === undefined) return {};
  if (support !== undefined && !["optional", "required", "forbidden"].includes(String(support))) {
    throw new TypeError(
      `tool "${String(name)}": task support must be "optional", "required" or "forbidden", got ${
        JSON.stringify(support)
      }`,
    );
  }
  if (afterInput !== undefined && typeof afterInput !== "boolean") {
    throw new TypeError(`tool "${String(name)}": task_after_input must be a boolean`);
  }
  return {
    ...(support !== undefined ? { taskSupport: support as TaskSupport } : {}),
    ...(afterInput === true ? { taskAfterInput: true } : {}),
  };
}
