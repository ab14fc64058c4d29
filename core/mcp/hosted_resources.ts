/**
 * The resources, resource templates and prompts of hosted MCP servers
 * (core/hosted/), listed and readable through corral's own MCP server, on
 * stdio and over HTTP alike: each comes from the server that listed it,
 * started in its sandbox for the session's principal, scrubbed of its
 * secrets. Over HTTP an identity's view (./identity_registry.ts) offers
 * only the servers it may reach. Each listing is one handler here; a new
 * kind of listing is one more {@link HostedResources} method and handler.
 * A server that fails or times out is left out of a listing, and named in
 * a log notification to the client.
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

/** Who asks (core/hosted/hosted_listings.ts): the servers it may reach, and its identity. */
export interface HostedCaller {
  only?: (server: string) => boolean;
  identity?: string;
  /** Hears the servers left out of a listing (failed or timed out), and why. */
  onLeftOut?: (left: Array<{ server: string; reason: string }>) => void;
}

/**
 * What serving hosted resources needs (core/hosted/hosted_servers.ts
 * `HostedServers` offers it; an identity's view narrows it).
 */
export interface HostedResources {
  /** The hosted servers (only their names are read here). */
  readonly entries: ReadonlyArray<{ name: string }>;
  /** Resources (or resource templates) of every server that may start, marked with their server. */
  listResources(
    templates: boolean,
    principal: string,
    caller?: HostedCaller,
  ): Promise<Array<Record<string, unknown>>>;
  /** Read a resource from the server that listed it. */
  readResource(
    uri: string,
    principal: string,
    caller?: HostedCaller,
  ): Promise<Record<string, unknown>>;
  /** Prompts of every server that may start (prefixed with their server when names collide). */
  listPrompts(principal: string, caller?: HostedCaller): Promise<Array<Record<string, unknown>>>;
  /** Get a prompt by the name the listing gave it. */
  getPrompt(
    name: string,
    args: Record<string, string> | undefined,
    principal: string,
    caller?: HostedCaller,
  ): Promise<Record<string, unknown>>;
}

/** Serve the hosted servers' resources and prompts on `server` (before it connects), for `principal`. */
export function serveHostedResources(
  server: Server,
  hosted: HostedResources,
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
  // A server that failed or timed out is left out of a listing: the client is told which.
  const leftOut = (what: string): HostedCaller => ({
    onLeftOut: (left) => {
      const data = `${what}: left out ${left.map((l) => l.reason).join("; ")}`;
      server.sendLoggingMessage({ level: "warning", logger: "corral", data }).catch(() => {});
    },
  });
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
