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

/** Serve the hosted servers' resources and prompts on `server` (before it connects), for `principal`. */
export function serveHostedResources(
  server: Server,
  hosted: HostedServers,
  principal: string,
): void {
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
  // The session's principal: the same server instances as its tool calls, its own alone.
  server.setRequestHandler(ListResourcesRequestSchema, () =>
    guard(async () => ({
      resources: await hosted.listResources(false, principal),
    })) as never);
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () =>
    guard(async () => ({
      resourceTemplates: await hosted.listResources(true, principal),
    })) as never);
  server.setRequestHandler(
    ReadResourceRequestSchema,
    (r) => guard(() => hosted.readResource(r.params.uri, principal)) as never,
  );
  server.setRequestHandler(
    ListPromptsRequestSchema,
    () => guard(async () => ({ prompts: await hosted.listPrompts(principal) })) as never,
  );
  server.setRequestHandler(
    GetPromptRequestSchema,
    (r) => guard(() => hosted.getPrompt(r.params.name, r.params.arguments, principal)) as never,
  );
}
