/**
 * corral's tools over the Model Context Protocol: one session, whatever
 * the transport (./serve_stdio.ts, ./serve_http.ts).
 *
 * A thin layer over the {@link Registry}, put together here from one file
 * per concern: `tools/list` (./_tool_list.ts) shows the loaded tools with
 * their JSON Schemas and annotations derived from the permission letters;
 * `tools/call` (./_tool_calls.ts) runs a tool in its sandbox. Reports become
 * progress and log notifications (./_call_notifications.ts, ./_log_level.ts),
 * cancellation stops the sandbox call, tools that need confirmation ask the
 * client through elicitation (./_client_asks.ts), results are mapped by
 * ./_call_result.ts, hosted servers' resources and prompts served by
 * ./hosted_resources.ts; the session's principal ends with it
 * (./_session_principal.ts).
 *
 * @module
 */
import type { Server, Transport } from "@modelcontextprotocol/server";
import { corralVersion } from "../config/mod.ts";
import {
  CallGate,
  DEFAULT_MAX_CONCURRENT,
  DEFAULT_MAX_QUEUE,
  type GateCaller,
} from "./_call_gate.ts";
import { serveHostedResources } from "./hosted_resources.ts";
import { InputRounds } from "./_input_rounds.ts";
import { LogLevel } from "./_log_level.ts";
import type { McpRegistry } from "./_mcp_registry.ts";
import { SessionPrincipal } from "./_session_principal.ts";
import { serveTaskMethods, TASKS_EXTENSION } from "./tasks/_task_methods.ts";
import { TaskServer } from "./tasks/_task_server.ts";
import { TaskStore } from "./tasks/_task_store.ts";
import { serveToolCalls, type ToolCallHandler } from "./_tool_calls.ts";
import { serveToolList } from "./_tool_list.ts";

export type { McpRegistry } from "./_mcp_registry.ts";

/** Options shared by every MCP transport. */
export interface McpServerOptions {
  /** Server name in `initialize` (default `corral`). */
  name?: string;
  /** Server version in `initialize` (default corral's version). */
  version?: string;
  /** Calls running at once in the instance (default 8); more wait in the queue. */
  maxConcurrent?: number;
  /** Calls waiting for a slot (default 256); more get a tool error result at once. */
  maxQueue?: number;
  /**
   * Ask the client to confirm through elicitation when it supports it
   * (default true; stateless HTTP turns it off: the answer could reach
   * another instance).
   */
  elicitation?: boolean;
  /** The instance's gate, shared by every session (default: one of its own). */
  gate?: CallGate;
  /**
   * Whom this server's calls are for (RegistryCallOptions.principal), kept
   * when it closes (a stateless caller's token). Default: a principal of its
   * own, ended when the session closes, so that its sandboxes close with it.
   */
  principal?: string;
  /** Who this session is, for the audit log (an HTTP identity; default `local`). */
  identity?: string;
  /** This session's caller at the gate: its own queue and caps (default: none of its own). */
  caller?: GateCaller;
  /** The instance's parked calls (2026-07-28 rounds); default: one of its own. */
  rounds?: InputRounds;
  /** The instance's tasks (tasks extension, ./tasks/); default: a store of its own. */
  tasks?: TaskStore;
  /**
   * Hold a task of this caller as live work of its credential (./_revocation_watch.ts):
   * `end` cancels it when the credential is revoked; the returned function lets go.
   */
  holdTask?: (end: (reason: Error) => void) => () => void;
}

export { DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_QUEUE } from "./_call_gate.ts";

/** One MCP session: an SDK `Server` wired to the registry. */
export interface CorralMcpServer {
  /** The SDK server (connect it to one transport). */
  readonly server: Server;
  /** Connect to a transport and start serving. */
  connect(transport: Transport): Promise<void>;
  /** Send `notifications/tools/list_changed` (ignored before the client is connected). */
  notifyToolsChanged(): Promise<void>;
  /** Close the connection (and end its own principal). */
  close(): Promise<void>;
  /**
   * Its credential was revoked: its calls stop at once (audited `denied`,
   * `revoked`), then it closes like {@link close}.
   */
  revoke(reason: Error): Promise<void>;
  /** Whom its calls are for: no other session's calls share their sandboxes. */
  readonly principal: string;
  /** Its calls running now: a session with a call in flight is not idle. */
  readonly running: number;
  /** Its `tools/call` handler, the one the SDK runs (for the stdio lane, ./fast_call.ts). */
  readonly callTool: ToolCallHandler;
}

/**
 * Build an MCP server over a registry: `tools/list`, `tools/call`,
 * `logging/setLevel`, progress, cancellation and elicitation.
 *
 * @example
 * ```ts ignore
 * import { InMemoryTransport } from "@modelcontextprotocol/server";
 * import { Registry } from "../registry/mod.ts";
 * import { createMcpServer } from "./mcp_server.ts";
 * const registry = await Registry.create({ privileges: "r" });
 * const [, serverSide] = InMemoryTransport.createLinkedPair();
 * await createMcpServer(registry).connect(serverSide);
 * ```
 */
export function createMcpServer(
  registry: McpRegistry,
  options: McpServerOptions = {},
): CorralMcpServer {
  const gate = options.gate ??
    new CallGate(
      options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT,
      options.maxQueue ?? DEFAULT_MAX_QUEUE,
    );
  const rounds = options.rounds ?? new InputRounds();
  const server = _sdkServer(options, rounds);
  // One session, one principal: its sandboxes are its own and close with it.
  const principal = new SessionPrincipal(registry, options.principal);
  if (registry.hosted?.entries.length) {
    serveHostedResources(server, registry.hosted, principal.name, {
      rounds,
      elicitation: options.elicitation,
    });
  }
  const logLevel = new LogLevel().serve(server);
  serveToolList(server, registry);
  const tasks = options.tasks ?? new TaskStore();
  serveTaskMethods(server, tasks, principal.name);
  const callTool = serveToolCalls(server, {
    registry,
    gate,
    principal,
    identity: options.identity,
    caller: options.caller,
    elicitation: options.elicitation,
    logLevel,
    rounds,
    tasks,
    holdTask: options.holdTask,
  });
  return _session(server, principal, callTool);
}

function _sdkServer(options: McpServerOptions, rounds: InputRounds): Server {
  return new TaskServer(
    { name: options.name ?? "corral", version: options.version ?? corralVersion() },
    {
      // Tasks (./tasks/): advertised as the extension, never 2025-11-25's `tasks` slot.
      capabilities: {
        tools: { listChanged: true },
        logging: {},
        extensions: { [TASKS_EXTENSION]: {} },
      },
      // 2026-07-28: how long a listing may be kept. Lists are per identity (private); a change
      // is announced on subscriptions/listen. A resource's content may change at any time.
      cacheHints: {
        "tools/list": _LISTING_HINT,
        "prompts/list": _LISTING_HINT,
        "resources/list": _LISTING_HINT,
        "resources/templates/list": _LISTING_HINT,
        "resources/read": { ttlMs: 0, cacheScope: "private" },
        "server/discover": { ttlMs: 60_000, cacheScope: "public" },
      },
      // A round's state is corral's, signed; a tampered one is refused before any handler.
      requestState: { verify: (state, ctx) => rounds.codec.verify(state, ctx) },
      instructions: "corral runs every tool in a sandbox that holds only the tool's permission " +
        "letters (r read, w write, x run, n network); see each tool's _meta.",
    },
  );
}

function _session(
  server: Server,
  principal: SessionPrincipal,
  callTool: ToolCallHandler,
): CorralMcpServer {
  let connected = false;
  return {
    server,
    callTool,
    principal: principal.name,
    get running() {
      return principal.running;
    },
    async connect(transport) {
      await server.connect(transport);
      // However the transport closes (DELETE, idle expiry, stdin's end), the principal ends.
      const closed = transport.onclose;
      transport.onclose = () => {
        closed?.();
        principal.end();
      };
      connected = true;
    },
    async notifyToolsChanged() {
      if (!connected) return;
      await server.sendToolListChanged().catch(() => {/* not connected any more */});
    },
    async close() {
      connected = false;
      await server.close();
      principal.end();
    },
    async revoke(reason) {
      principal.revoke(reason);
      connected = false;
      await server.close();
      principal.end();
    },
  };
}

/** The cache hint of listings (2026-07-28): kept 30 s by this client only. */
const _LISTING_HINT = { ttlMs: 30_000, cacheScope: "private" } as const;

/** A running MCP server, whatever its transport. */
export interface McpHandle {
  /** Resolves when the server has stopped. */
  readonly finished: Promise<void>;
  /** Tell every connected client that the tool list changed. */
  notifyToolsChanged(): Promise<void>;
  /** Stop serving. */
  close(): Promise<void>;
}
