/**
 * corral's public API for tool authors: the `@tool` decorator and
 * `BaseTool` for class tools, the `ToolConfig` type for module tools, the
 * result helpers, path guards, the subprocess helper, and the command-line
 * harness. Nothing internal to the host is exported here.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { BaseTool, tool } from "./mod.ts";
 *
 * @tool({ permissions: "", description: "Add two numbers", input: z.object({ a: z.number(), b: z.number() }) })
 * export class Add extends BaseTool {
 *   run({ a, b }: { a: number; b: number }) {
 *     return { success: true, a, b, sum: a + b };
 *   }
 * }
 * ```
 *
 * @module
 */
export { BaseTool, tool, TOOL_NAME_PATTERN } from "./tool/mod.ts";
export type {
  Grant,
  LoadDecision,
  ReportKind,
  ReportOptions,
  ToolCallContext,
  ToolConfig,
  ToolDefinition,
  ToolOptions,
} from "./tool/mod.ts";
export { failure, type ToolResult } from "./tool/mod.ts";
export { apiContent, type ContentBlock, contentProblems } from "./tool/mod.ts";
export { ConfigError, PermissionDeniedError, ToolTimeoutError } from "./tool/mod.ts";
export { type Letter, LETTERS } from "./tool/mod.ts";
export { displayPath, fsError, isInside, resolveInside, type ResolveOptions } from "./guard/mod.ts";
export { runSubprocess, type SubprocessOptions, type SubprocessResult } from "./guard/mod.ts";
export { type HarnessOptions, runHarness } from "./tool/mod.ts";
export {
  type AddressClass,
  classifyAddress,
  type GuardOptions,
  guardUrl,
  listedExplicitly,
  NetworkGuardError,
} from "./guard/mod.ts";
