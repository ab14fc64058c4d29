/**
 * `tasks/get`, `tasks/update` and `tasks/cancel` (tasks extension,
 * `io.modelcontextprotocol/tasks`; the v2 SDK serves none of it). Each is
 * answered only for a request that declares the extension in its
 * capabilities (else `-32021`, naming it), and only about the tasks of the
 * request's principal (./_task_store.ts). `tasks/result` and `tasks/list`
 * (2025-11-25's tasks) are no methods of 2026-07-28: the SDK answers
 * `-32601`.
 *
 * @module
 */
import {
  MissingRequiredClientCapabilityError,
  type Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import type { TaskStore } from "./_task_store.ts";

/** The extension's name, in capabilities and errors. */
export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

const _CAPS = "io.modelcontextprotocol/clientCapabilities";

const _id = z.object({ taskId: z.string().max(200) }).passthrough();

/** True when the request of `ctx` declares the tasks extension in its capabilities. */
export function declaresTasks(capabilities: unknown): boolean {
  const ext = (capabilities as { extensions?: Record<string, unknown> } | undefined)?.extensions;
  return !!ext && typeof ext === "object" && ext[TASKS_EXTENSION] !== undefined;
}

/** The error of a request that needs the extension and did not declare it (`-32021`). */
export function tasksNotDeclared(): MissingRequiredClientCapabilityError {
  return new MissingRequiredClientCapabilityError({
    requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
  } as never);
}

/** Answer the task methods on `server` for the tasks of `principal` in `store`. */
export function serveTaskMethods(server: Server, store: TaskStore, principal: string): void {
  const gate = (ctx: ServerContext) => {
    if (!declaresTasks(ctx.mcpReq.envelope?.[_CAPS as never])) throw tasksNotDeclared();
  };
  server.setRequestHandler("tasks/get", { params: _id }, (params, ctx) => {
    gate(ctx);
    return { resultType: "complete", ...store.get(principal, params.taskId) } as never;
  });
  // `inputResponses` reach the handler as the SDK lifted them (`ctx.mcpReq`), answers only.
  server.setRequestHandler("tasks/update", { params: _id }, (params, ctx) => {
    gate(ctx);
    store.update(principal, params.taskId, ctx.mcpReq.inputResponses);
    return { resultType: "complete" } as never;
  });
  server.setRequestHandler("tasks/cancel", { params: _id }, (params, ctx) => {
    gate(ctx);
    store.cancel(principal, params.taskId);
    return { resultType: "complete" } as never;
  });
}
