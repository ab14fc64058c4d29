/**
 * A tool's result as an MCP `tools/call` result: content blocks as
 * `content` (else the JSON, with one line per problem for the model), the
 * rest as `structuredContent`, `isError` when it did not succeed.
 *
 * @module
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import { type CallFault, faultOf, mcpContent, type ToolResult } from "../tool/mod.ts";

const _FAULTS = new WeakMap<object, CallFault>();

/**
 * The MCP answer for a tool's result (its fault, if any, kept beside it:
 * {@link callFault}). A tool that declares an output schema (a hosted
 * server's) answers with its own structured content: its `result`, and
 * none on an error (a client checks what it gets against the schema).
 */
export function callToolResult(result: ToolResult, outputSchema = false): CallToolResult {
  const own = result.result;
  const structured = !outputSchema
    ? _structured(result)
    : result.success && own && typeof own === "object" && !Array.isArray(own)
    ? own as Record<string, unknown>
    : undefined;
  const out: CallToolResult = {
    content: mcpContent(result, () => _resultText(result)) as CallToolResult["content"],
    ...(structured ? { structuredContent: structured } : {}),
    isError: !result.success,
  };
  _held(result, out);
  const fault = faultOf(result);
  if (fault) _FAULTS.set(out, fault);
  return out;
}

/**
 * A call whose changes are held for review (core/layers/held_writer.ts)
 * says so in `_meta["corral/held"]` and in its text, whatever its content
 * is (a tool's own blocks, a hosted server's structured result).
 */
function _held(result: ToolResult, out: CallToolResult): void {
  const held = result.held_changes as { id?: unknown; note?: unknown } | undefined;
  if (!held || typeof held !== "object" || typeof held.id !== "string") return;
  out._meta = { ...out._meta, "corral/held": held };
  const said = out.content.some((c) => c.type === "text" && c.text.includes(held.id as string));
  if (!said) out.content.push({ type: "text", text: String(held.note ?? held.id) });
}

/**
 * Why the tool result behind `result` failed, when corral marked it
 * (core/tool/result.ts): a task's `failed` status is corral's `error`
 * (a throw, a crash, a timeout), never the tool's own failure.
 */
export function callFault(result: unknown): CallFault | undefined {
  return result && typeof result === "object" ? _FAULTS.get(result) : undefined;
}

/** A tool error result: `{ success: false, error: message }`. */
export function errorResult(message: string): CallToolResult {
  const result = { success: false, error: message };
  return {
    content: [{ type: "text", text: JSON.stringify(result, null, 2) }],
    structuredContent: result,
    isError: true,
  };
}

/** The result without its content blocks (they travel as `content`). */
function _structured(result: ToolResult): ToolResult {
  if (!Array.isArray(result.content_blocks)) return result;
  const { content_blocks: _blocks, ...rest } = result;
  return rest as ToolResult;
}

function _resultText(result: ToolResult): string {
  const json = JSON.stringify(_structured(result), null, 2);
  const problems = result.problems;
  if (result.success || !Array.isArray(problems) || problems.length === 0) return json;
  // Invalid arguments: one line per problem before the JSON, for the model.
  return `${result.error}\n${problems.map((p) => `- ${p}`).join("\n")}\n\n${json}`;
}
