/**
 * The resources and prompts of hosted MCP servers (core/hosted/), listed
 * and readable through corral's own MCP server: each comes from the server
 * that listed it, started in its sandbox for this, scrubbed of its secrets.
 * A server that fails or times out is left out of a listing, and named in a
 * log notification to the client.
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
import type { LeftOut } from "../hosted/hosted_listings.ts";

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
  // Servers that failed or timed out are left out of a listing: the client is told which.
  const leftOut = (what: string) => (left: LeftOut[]) => {
    const data = `${what}: left out ${left.map((l) => l.reason).join("; ")}`;
    server.sendLoggingMessage({ level: "warning", logger: "corral", data }).catch(() => {});
  };
  // The session's principal: the same server instances as its tool calls, its own alone.
  server.setRequestHandler(ListResourcesRequestSchema, () =>
    guard(async () => ({
      resources: await hosted.listResources(false, principal, leftOut("resources/list")),
    })) as never);
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () =>
    guard(async () => ({
      resourceTemplates: await hosted.listResources(
        true,
        principal,
        leftOut("resources/templates/list"),
      ),
    })) as never);
  server.setRequestHandler(
    ReadResourceRequestSchema,
    (r) => guard(() => hosted.readResource(r.params.uri, principal)) as never,
  );
  server.setRequestHandler(
    ListPromptsRequestSchema,
    () =>
      guard(async () => ({
        prompts: await hosted.listPrompts(principal, leftOut("prompts/list")),
      })) as never,
  );
  server.setRequestHandler(
    GetPromptRequestSchema,
    (r) => guard(() => hosted.getPrompt(r.params.name, r.params.arguments, principal)) as never,
  );
}
