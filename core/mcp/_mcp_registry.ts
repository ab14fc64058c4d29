/**
 * What an MCP server needs of the registry (core/registry/registry.ts): an
 * identity's view (./http_identity.ts) offers the same.
 *
 * @module
 */
import type { RegistryCallOptions, ToolInfo } from "../registry/mod.ts";
import type { ToolResult } from "../tool/mod.ts";
import type { HostedResources } from "./hosted_resources.ts";

/** The registry an MCP server serves. */
export interface McpRegistry {
  /** The loaded tools, listed by `tools/list`. */
  loaded(): ToolInfo[];
  /** Every tool, loaded or not. */
  list(): ToolInfo[];
  /** Run a tool; throws a `TypeError` for unknown names. */
  call(name: string, args: unknown, options?: RegistryCallOptions): Promise<ToolResult>;
  /** `Unknown tool "X" (did you mean: …?)`. */
  unknownToolMessage(name: string): string;
  /** A principal ended: close its sandboxes and kill all they started (Registry.endPrincipal). */
  endPrincipal?(principal: string): Promise<void>;
  /** Audit a call refused before `call` (Registry.auditRefusal): one `denied` line. */
  auditRefusal?(
    name: string,
    args: unknown,
    options: RegistryCallOptions,
    reason: string,
    message: string,
  ): Promise<void>;
  /** Hosted MCP servers: their resources and prompts are served too (./hosted_resources.ts). */
  hosted?: HostedResources;
}
