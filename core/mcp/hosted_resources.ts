/**
 * The resources, resource templates and prompts of hosted MCP servers
 * (core/hosted/), listed and readable through corral's own MCP server, on
 * stdio and over HTTP alike: each comes from the server that listed it,
 * started in its sandbox for the session's principal, scrubbed of its
 * secrets. Over HTTP an identity's view (./identity_registry.ts) offers
 * only the servers it may reach. Each listing is one handler here; a new
 * kind of listing is one more {@link HostedResources} method and handler.
 *
 * @module
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  type Server,
} from "@modelcontextprotocol/server";

/** Who asks (core/hosted/hosted_listings.ts): the servers it may reach, and its identity. */
export interface HostedCaller {
  only?: (server: string) => boolean;
  identity?: string;
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
  /** Complete an argument of a prompt or a resource template. */
  complete(
    params: Record<string, unknown>,
    principal: string,
    caller?: HostedCaller,
  ): Promise<Record<string, unknown>>;
  /** Subscribe to (`on`) or unsubscribe from a resource's updates. */
  subscribe(
    uri: string,
    on: boolean,
    principal: string,
    caller?: HostedCaller,
  ): Promise<Record<string, unknown>>;
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
  server.registerCapabilities({
    resources: { subscribe: true },
    prompts: {},
    completions: {},
  });
  const guard = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw _protocolError(err);
    }
  };
  // The session's principal: the same server instances as its tool calls, its own alone.
  server.setRequestHandler("resources/list", () =>
    guard(async () => ({
      resources: await hosted.listResources(false, principal),
    })) as never);
  server.setRequestHandler("resources/templates/list", () =>
    guard(async () => ({
      resourceTemplates: await hosted.listResources(true, principal),
    })) as never);
  server.setRequestHandler("resources/read", (r) =>
    guard(async () => {
      try {
        return await hosted.readResource(r.params.uri, principal);
      } catch (err) {
        // A URI no server lists: the spec's "resource not found" (-32602 with the URI).
        if (err instanceof TypeError) throw new ResourceNotFoundError(r.params.uri);
        throw err;
      }
    }) as never);
  for (const [method, on] of [["resources/subscribe", true], ["resources/unsubscribe", false]]) {
    server.setRequestHandler(
      method as "resources/subscribe",
      (r) => guard(() => hosted.subscribe(r.params.uri, on as boolean, principal)) as never,
    );
  }
  server.setRequestHandler(
    "completion/complete",
    (r) => guard(() => hosted.complete(r.params as Record<string, unknown>, principal)) as never,
  );
  server.setRequestHandler(
    "prompts/list",
    () => guard(async () => ({ prompts: await hosted.listPrompts(principal) })) as never,
  );
  server.setRequestHandler(
    "prompts/get",
    (r) => guard(() => hosted.getPrompt(r.params.name, r.params.arguments, principal)) as never,
  );
}

/**
 * The error the client gets: a protocol error as it is, a hosted server's
 * own JSON-RPC error (the v1 client's `McpError`) with its code and data,
 * a `TypeError` (nothing offers what was named) as invalid params, anything
 * else as an internal error.
 */
function _protocolError(err: unknown): ProtocolError {
  if (err instanceof ProtocolError) return err;
  const e = err as { name?: string; code?: unknown; message?: string; data?: unknown };
  if (e?.name === "McpError" && Number.isSafeInteger(e.code)) {
    const message = String(e.message ?? "").replace(/^MCP error -?\d+: /, "");
    return ProtocolError.fromError(e.code as number, message, e.data);
  }
  return new ProtocolError(
    err instanceof TypeError ? ProtocolErrorCode.InvalidParams : ProtocolErrorCode.InternalError,
    (err as Error).message,
  );
}
