/**
 * `tools/list`: the loaded tools with their JSON Schemas and the
 * annotations derived from their permission letters. A tool's task support
 * (`execution`) is not listed: a 2025-11-25 client would take it for that
 * revision's tasks, which corral does not serve, and 2026-07-28 has no
 * `execution` (the server decides what runs as a task, ./tasks/).
 *
 * @module
 */
import type { ListToolsResult, Server, Tool } from "@modelcontextprotocol/server";
import type { ToolInfo } from "../registry/mod.ts";
import { formatSchemas } from "../tool/mod.ts";

/** Answer `tools/list` on `server` (before it connects) with `registry`'s loaded tools. */
export function serveToolList(server: Server, registry: { loaded(): ToolInfo[] }): void {
  server.setRequestHandler("tools/list", (): ListToolsResult => {
    // In name order, whatever order plugins loaded in (2026-07-28: deterministic listings).
    const tools = (formatSchemas(registry.loaded(), "mcp") as Tool[]).map((t) => {
      if (!("execution" in t)) return t;
      const { execution: _, ...rest } = t;
      return rest as Tool;
    });
    return { tools: tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) };
  });
}
