/**
 * `tools/list`: the loaded tools with their JSON Schemas and the
 * annotations derived from their permission letters.
 *
 * @module
 */
import type { ListToolsResult, Server, Tool } from "@modelcontextprotocol/server";
import type { ToolInfo } from "../registry/registry.ts";
import { formatSchemas } from "../tool/schema.ts";

/** Answer `tools/list` on `server` (before it connects) with `registry`'s loaded tools. */
export function serveToolList(server: Server, registry: { loaded(): ToolInfo[] }): void {
  server.setRequestHandler("tools/list", (): ListToolsResult => {
    // In name order, whatever order plugins loaded in (2026-07-28: deterministic listings).
    const tools = formatSchemas(registry.loaded(), "mcp") as Tool[];
    return { tools: tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) };
  });
}
