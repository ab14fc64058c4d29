/**
 * The resources and prompts of hosted MCP servers (core/hosted/), listed
 * and readable through corral's own MCP server: each comes from the server
 * that listed it, started in its sandbox for this, scrubbed of its secrets.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/index"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { HostedServers } from "../hosted/hosted_servers.ts";

/** Serve the hosted servers' resources and prompts on `server` (before it connects). */
export function serveHostedResources(server: Server, hosted: HostedServers): void {
  server.registerCapabilities({ resources: {}, prompts: {} });
  const guard = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      if (err instanceof McpError) throw err;
      throw new McpError(
        err instanceof TypeError ? ErrorCode.InvalidParams : ErrorCode.InternalError,
        (err as Error).message,
      );
    }
  };
  // Each session (principal) gets servers of its own (core/hosted/hosted_servers.ts).
  server.setRequestHandler(ListResourcesRequestSchema, (_r, extra) =>
    guard(async () => ({
      resources: await hosted.listResources(false, extra.sessionId),
    })) as never);
  server.setRequestHandler(ListResourceTemplatesRequestSchema, (_r, extra) =>
    guard(async () => ({
      resourceTemplates: await hosted.listResources(true, extra.sessionId),
    })) as never);
  server.setRequestHandler(
    ReadResourceRequestSchema,
    (r, extra) => guard(() => hosted.readResource(r.params.uri, extra.sessionId)) as never,
  );
  server.setRequestHandler(
    ListPromptsRequestSchema,
    (_r, extra) =>
      guard(async () => ({ prompts: await hosted.listPrompts(extra.sessionId) })) as never,
  );
  server.setRequestHandler(
    GetPromptRequestSchema,
    (r, extra) =>
      guard(() => hosted.getPrompt(r.params.name, r.params.arguments, extra.sessionId)) as never,
  );
}
