/**
 * `tools/list`: the loaded tools with their JSON Schemas and the
 * annotations derived from their permission letters.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/index"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  ListToolsRequestSchema,
  type ListToolsResult,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { ToolInfo } from "../registry/registry.ts";
import { formatSchemas } from "../tool/schema.ts";

/** Answer `tools/list` on `server` (before it connects) with `registry`'s loaded tools. */
export function serveToolList(server: Server, registry: { loaded(): ToolInfo[] }): void {
  server.setRequestHandler(ListToolsRequestSchema, (): ListToolsResult => {
    return { tools: formatSchemas(registry.loaded(), "mcp") as Tool[] };
  });
}
