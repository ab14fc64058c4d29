/**
 * `tools/list`: the loaded tools with their JSON Schemas and the
 * annotations derived from their permission letters. A tool's task support
 * (`execution`) is listed on 2026-07-28 only, where corral serves tasks
 * (./tasks/): a 2025-11-25 client is never told to call a tool as a task
 * of that revision, which corral does not serve.
 *
 * @module
 */
import type { ListToolsResult, Server, Tool } from "@modelcontextprotocol/server";
import type { ToolInfo } from "../registry/registry.ts";
import { formatSchemas } from "../tool/schema.ts";
import { isModern } from "./call_extra.ts";

/** Answer `tools/list` on `server` (before it connects) with `registry`'s loaded tools. */
export function serveToolList(server: Server, registry: { loaded(): ToolInfo[] }): void {
  server.setRequestHandler("tools/list", (_request, ctx): ListToolsResult => {
    // In name order, whatever order plugins loaded in (2026-07-28: deterministic listings).
    let tools = formatSchemas(registry.loaded(), "mcp") as Tool[];
    if (!isModern(ctx)) {
      tools = tools.map((t) => {
        if (!("execution" in t)) return t;
        const { execution: _, ...rest } = t;
        return rest as Tool;
      });
    }
    return { tools: tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) };
  });
}
