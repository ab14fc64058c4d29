/**
 * The resources, resource templates and prompts of hosted MCP servers
 * (core/hosted/), listed and readable through corral's own MCP server, on
 * stdio and over HTTP alike: each comes from the server that listed it,
 * started in its sandbox for the session's principal, scrubbed of its
 * secrets. Over HTTP an identity's view (./_identity_registry.ts) offers
 * only the servers it may reach. Each listing is one handler here; a new
 * kind of listing is one more {@link HostedResources} method and handler.
 * A server that fails or times out is left out of a listing, and named in
 * a log notification to the client.
 *
 * @module
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  type Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { callExtra, isModern } from "./_call_extra.ts";
import { type ClientAsks, clientAsks, roundAsks } from "./_client_asks.ts";
import type { InputRounds } from "./_input_rounds.ts";

/** Who asks (core/hosted/hosted_listings.ts): the servers it may reach, and its identity. */
export interface HostedCaller {
  only?: (server: string) => boolean;
  identity?: string;
  /** Hears the servers left out of a listing (failed or timed out), and why. */
  onLeftOut?: (left: Array<{ server: string; reason: string }>) => void;
  /** Answers a server's questions (sampling, elicitation) while it serves this request. */
  onAsk?: ClientAsks["onAsk"];
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

/** How prompts/get asks the client a hosted server's questions. */
export interface HostedAsking {
  /** The instance's parked calls: a 2026-07-28 client's questions become rounds. */
  rounds?: InputRounds;
  /** False: never ask the client through elicitation (stateless HTTP). */
  elicitation?: boolean;
}

/** Serve the hosted servers' resources and prompts on `server` (before it connects), for `principal`. */
export function serveHostedResources(
  server: Server,
  hosted: HostedResources,
  principal: string,
  asking: HostedAsking = {},
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
  // A server that failed or timed out is left out of a listing: the client is told which.
  const leftOut = (what: string): HostedCaller => ({
    onLeftOut: (left) => {
      const data = `${what}: left out ${left.map((l) => l.reason).join("; ")}`;
      server.sendLoggingMessage({ level: "warning", logger: "corral", data }).catch(() => {});
    },
  });
  // The session's principal: the same server instances as its tool calls, its own alone.
  server.setRequestHandler("resources/list", () =>
    guard(async () => ({
      resources: await hosted.listResources(false, principal, leftOut("resources/list")),
    })) as never);
  server.setRequestHandler("resources/templates/list", () =>
    guard(async () => ({
      resourceTemplates: await hosted.listResources(
        true,
        principal,
        leftOut("resources/templates/list"),
      ),
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
    () =>
      guard(async () => ({
        prompts: await hosted.listPrompts(principal, leftOut("prompts/list")),
      })) as never,
  );
  server.setRequestHandler("prompts/get", (r, ctx) => {
    const get = (onAsk: HostedCaller["onAsk"]) =>
      guard(() => hosted.getPrompt(r.params.name, r.params.arguments, principal, { onAsk }));
    return _promptWithAsks(server, ctx, principal, r.params, asking, get) as never;
  });
}

/**
 * prompts/get whose hosted server may ask (sampling, elicitation): the
 * questions go to the client of this request, as rounds of it for a
 * 2026-07-28 client (./_input_rounds.ts, bound to the principal, the prompt
 * and its arguments), as requests within it for a 2025-11-25 one.
 */
function _promptWithAsks(
  server: Server,
  ctx: ServerContext,
  principal: string,
  params: { name: string; arguments?: Record<string, string> },
  asking: HostedAsking,
  get: (onAsk: HostedCaller["onAsk"]) => Promise<unknown>,
): Promise<unknown> {
  const modern = isModern(ctx);
  const extra = callExtra(ctx, modern);
  const m = extra.modern;
  if (!m || !asking.rounds) return get(clientAsks(server, extra, asking.elicitation).onAsk);
  const key = `prompts/get\0${params.name}\0${JSON.stringify(params.arguments ?? {})}`;
  const caps = m.clientCapabilities;
  if (m.requestState !== undefined) {
    return asking.rounds.resume(m.requestState, principal, key, caps, m.inputResponses);
  }
  return asking.rounds.begin(principal, key, caps, (ask) => get(roundAsks(ask, caps).onAsk));
}

/**
 * The error the client gets: a protocol error as it is (a hosted server's own
 * JSON-RPC error reaches here as one, through the v2 client), a `TypeError`
 * (nothing offers what was named) as invalid params, anything else as an
 * internal error.
 */
function _protocolError(err: unknown): ProtocolError {
  if (err instanceof ProtocolError) return err;
  return new ProtocolError(
    err instanceof TypeError ? ProtocolErrorCode.InvalidParams : ProtocolErrorCode.InternalError,
    (err as Error).message,
  );
}
