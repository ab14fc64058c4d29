/**
 * A tool's result as an MCP `tools/call` result: content blocks as
 * `content` (else the JSON, with one line per problem for the model), the
 * rest as `structuredContent`, `isError` when it did not succeed.
 *
 * @module
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import { mcpContent } from "../tool/content.ts";
import type { ToolResult } from "../tool/result.ts";

/** The MCP answer for a tool's result. */
export function callToolResult(result: ToolResult): CallToolResult {
  return {
    content: mcpContent(result, () => _resultText(result)) as CallToolResult["content"],
    structuredContent: _structured(result),
    isError: !result.success,
  };
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
