/**
 * The catalog in the three function-calling formats: OpenAI, Anthropic and
 * MCP. (JSON Schema from zod is made in the sandbox: core/tool/input_schema.ts.)
 *
 * @module
 */
/** A JSON Schema object describing a tool's arguments. */
export type JsonSchema = Record<string, unknown>;

/** Formats `corral schema` can print. */
export type SchemaFormat = "openai" | "anthropic" | "mcp";

/** The facts of a tool that the schema formats need. */
export interface SchemaTool {
  name: string;
  description: string;
  permissions: string;
  inputSchema: JsonSchema;
  toolset?: string;
  source?: string;
  isolation?: string;
  /** MCP annotations given by a hosted server: kept, over the derived ones. */
  annotations?: Record<string, unknown>;
  /** MCP `execution.taskSupport`, listed as `execution` when given. */
  taskSupport?: string;
  /** MCP `outputSchema` (a hosted server's), listed as given. */
  outputSchema?: Record<string, unknown>;
  /** MCP `icons` (a hosted server's), listed as given. */
  icons?: Array<Record<string, unknown>>;
}

/** MCP tool annotations derived from the permission letters. */
export function mcpAnnotations(tool: SchemaTool): Record<string, unknown> {
  const p = tool.permissions;
  return {
    title: _title(tool.name),
    readOnlyHint: /^r?$/.test(p),
    destructiveHint: p.includes("w"),
    openWorldHint: p.includes("n"),
  };
}

function _title(name: string): string {
  return name.replace(/[_.-]+/g, " ").replace(/([a-z0-9])([A-Z])/g, "$1 $2").trim();
}

/**
 * The catalog in one format.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatSchemas } from "./schema.ts";
 * const tools = [{ name: "Echo", description: "Echo", permissions: "", inputSchema: { type: "object", properties: {} } }];
 * const [openai] = formatSchemas(tools, "openai") as any[];
 * assert.ok(openai.type === "function" && openai.function.name === "Echo");
 * ```
 */
export function formatSchemas(tools: SchemaTool[], format: SchemaFormat): unknown[] {
  switch (format) {
    case "openai":
      return tools.map((t) => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.inputSchema },
      }));
    case "anthropic":
      return tools.map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: t.inputSchema,
      }));
    case "mcp":
      return tools.map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: t.inputSchema,
        annotations: t.annotations ? { ...mcpAnnotations(t), ...t.annotations } : mcpAnnotations(t),
        ...(t.taskSupport ? { execution: { taskSupport: t.taskSupport } } : {}),
        ...(t.outputSchema ? { outputSchema: t.outputSchema } : {}),
        ...(t.icons ? { icons: t.icons } : {}),
        _meta: {
          "corral/permissions": t.permissions,
          "corral/toolset": t.toolset,
          "corral/source": t.source,
          "corral/isolation": t.isolation,
        },
      }));
    default:
      throw new TypeError(
        `unknown schema format "${format as string}" (use openai, anthropic or mcp)`,
      );
  }
}
