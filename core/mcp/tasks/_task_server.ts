/**
 * The SDK's `Server` with one seam more: a `tools/call` may answer with a
 * `CreateTaskResult` (`resultType: "task"`, tasks extension). The v2 SDK
 * checks every `tools/call` result against `CallToolResult`, which a task
 * handle is not; this server lets a task handle through as it is and
 * checks every other result as before.
 *
 * @module
 */
import { Server } from "@modelcontextprotocol/server";

/** A task handle on its way out of the `tools/call` handler, past the SDK's result check. */
class _TaskHandle extends Error {
  constructor(readonly result: Record<string, unknown>) {
    super("task");
  }
}

// deno-lint-ignore no-explicit-any
type _Handler = (request: any, ctx: any) => Promise<any>;

/** A `Server` whose `tools/call` may answer with a task handle (./_task_calls.ts). */
export class TaskServer extends Server {
  protected override _wrapHandler(method: string, handler: _Handler): _Handler {
    if (method !== "tools/call") return super._wrapHandler(method, handler);
    const checked = super._wrapHandler(method, async (request, ctx) => {
      const result = await handler(request, ctx);
      if (isTaskHandle(result)) throw new _TaskHandle(result);
      return result;
    });
    return async (request, ctx) => {
      try {
        return await checked(request, ctx);
      } catch (err) {
        if (err instanceof _TaskHandle) return err.result;
        throw err;
      }
    };
  }
}

/** True when `result` is a `CreateTaskResult`. */
export function isTaskHandle(result: unknown): result is Record<string, unknown> {
  return !!result && typeof result === "object" &&
    (result as { resultType?: unknown }).resultType === "task";
}
