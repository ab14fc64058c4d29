/**
 * Run one tool definition on raw arguments: validate with its zod schema,
 * call it, and hold the return contract whatever the tool does. Runs inside
 * the sandbox; tests call it directly.
 *
 * @module
 */
import { failure, normalizeResult, type ToolResult, withFault } from "./result.ts";
import type { ToolCallContext, ToolDefinition } from "./tool.ts";
import { validateArgs } from "./_validate.ts";

/**
 * Validate `args` and run `def`. Never throws: every outcome is a
 * {@link ToolResult}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { collectTools } from "./tool.ts";
 * import { invokeTool, testContext } from "./invoke.ts";
 * const { tools: [echo] } = await collectTools({ TOOL_CONFIG: { name: "Echo", description: "Echo", input_schema: z.object({ t: z.string() }), function: (a: { t: string }) => ({ t: a.t }) } });
 * const res = await invokeTool(echo, { t: "hi" }, testContext());
 * assert.ok(res.success && res.t === "hi");
 * ```
 */
export async function invokeTool(
  def: ToolDefinition,
  args: unknown,
  context: ToolCallContext,
): Promise<ToolResult> {
  if (args === null || typeof args !== "object" || Array.isArray(args)) {
    if (args !== undefined) {
      return withFault(failure(def.name, "arguments must be a JSON object"), "denied", "arguments");
    }
  }
  const valid = validateArgs(def.input, args);
  if (!valid.ok) {
    const refused = failure(def.name, `invalid arguments: ${valid.problems.join("; ")}`, {
      problems: valid.problems,
    });
    return withFault(refused, "denied", "arguments");
  }
  try {
    return normalizeResult(def.name, await def.invoke(valid.value, context));
  } catch (err) {
    const name = err instanceof Error ? err.name : "";
    const msg = err instanceof Error ? err.message : String(err);
    const reason = name === "NotCapable" || name === "PermissionDeniedError"
      ? `permission denied: ${msg}`
      : msg;
    // A throw is no answer of the tool's: corral's audit calls it an error (a refused permission: denied).
    return reason === msg
      ? withFault(failure(def.name, reason), "error", "threw")
      : withFault(failure(def.name, reason), "denied", "permission");
  }
}

/**
 * A context for running tools in tests: reports are collected in `reports`.
 */
export function testContext(
  options: Partial<Omit<ToolCallContext, "report">> = {},
): ToolCallContext & { reports: Array<{ kind: string; message: string }> } {
  const reports: Array<{ kind: string; message: string }> = [];
  const cwd = options.workspace ?? Deno.cwd();
  return {
    signal: options.signal ?? new AbortController().signal,
    workspace: cwd,
    grant: options.grant ?? { read: [cwd], write: [cwd], run: [], net: [] },
    ...(options.maxReadBytes ? { maxReadBytes: options.maxReadBytes } : {}),
    report: (kind, message) => reports.push({ kind, message }),
    reports,
  };
}
