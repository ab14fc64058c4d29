/**
 * MCP over Streamable HTTP at `/mcp`, with `Deno.serve`: sessions (or
 * none, `stateless`, for load balancers), and the checks every request
 * passes first: Host and Origin against DNS rebinding, the bearer token,
 * the path and the body size.
 *
 * Put together here from one file per concern: listening
 * (./http_listener.ts, ./listen_address.ts), the checks
 * (./request_checks.ts, identities in ./http_identity.ts), sessions
 * (./http_sessions.ts, ./session_request.ts) or none
 * (./stateless_request.ts), the instance's call gate (./call_gate.ts).
 *
 * @module
 */
import { ConfigError } from "../tool/errors.ts";
import { CallGate, DEFAULT_MAX_QUEUE } from "./call_gate.ts";
import type { Admitted, HttpIdentity } from "./http_identity.ts";
import { type HttpListener, listenHttp } from "./http_listener.ts";
import { DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_MS, HttpSessions } from "./http_sessions.ts";
import { isLoopback } from "./listen_address.ts";
import {
  type CorralMcpServer,
  createMcpServer,
  DEFAULT_MAX_CONCURRENT,
  type McpHandle,
  type McpRegistry,
  type McpServerOptions,
} from "./mcp_server.ts";
import { requestChecks } from "./request_checks.ts";
import { serveInSession } from "./session_request.ts";
import { serveStateless } from "./stateless_request.ts";

export { isLoopback, parseListenAddress } from "./listen_address.ts";
export { DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_MS } from "./http_sessions.ts";

/** Default of {@link McpHttpOptions.maxBodyBytes}: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** Options of {@link serveHttp}. */
export interface McpHttpOptions extends McpServerOptions {
  /** Address to bind (default 127.0.0.1). */
  hostname?: string;
  /** Port; 0 picks a free one. */
  port: number;
  /** Require `Authorization: Bearer TOKEN` on every request. */
  token?: string;
  /** Largest request body in bytes (default 1 MiB); more is refused with 413. */
  maxBodyBytes?: number;
  /** No sessions: each request is served on its own (for load balancers). */
  stateless?: boolean;
  /** Browser origins allowed besides loopback ones, e.g. `https://app.example`. */
  allowedOrigins?: string[];
  /** Path of the endpoint (default `/mcp`). */
  path?: string;
  /** Sessions at once (default 256); a new one beyond that gets 503. */
  maxSessions?: number;
  /** A session idle this long is closed (default 15 minutes). */
  sessionIdleMs?: number;
  /** A request head must be whole this long after connecting (default 5 s); else 408, closed. */
  headTimeoutMs?: number;
  /** Connections at once from one client address (default 256); beyond it 429, closed. */
  maxConnsPerClient?: number;
  /**
   * Identities (./http_identity.ts): every request's token names one, which
   * decides its tools, workspace and limits; it replaces the `token` check,
   * and serves the protected-resource metadata and `/metrics`.
   */
  team?: HttpIdentity;
}

/** A running Streamable HTTP server. */
export interface McpHttpHandle extends McpHandle {
  /** The bound address. */
  readonly hostname: string;
  /** The bound port. */
  readonly port: number;
  /** The endpoint, e.g. `http://127.0.0.1:8123/mcp`. */
  readonly url: string;
}

/**
 * Serve over Streamable HTTP at `/mcp` with `Deno.serve`. Binding a
 * non-loopback address without a token throws a {@link ConfigError}.
 * Requests are checked in this order: Host and Origin (403), bearer token
 * (401), path (404), body size (413).
 */
export function serveHttp(registry: McpRegistry, options: McpHttpOptions): McpHttpHandle {
  const { hostname, loopback, token, maxBody, maxConcurrent } = _settings(options);
  // One gate for the whole instance: every session and every stateless request.
  const gate = new CallGate(maxConcurrent, options.maxQueue ?? DEFAULT_MAX_QUEUE);
  const path = options.path ?? "/mcp";
  const team = options.team;
  // Telemetry: the identities' /metrics shows the calls waiting at the gate.
  team?.observeGate(gate);
  const sessions = new HttpSessions(
    options.maxSessions ?? DEFAULT_MAX_SESSIONS,
    options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS,
  );
  const check = requestChecks({
    loopback,
    token,
    team,
    path,
    maxBody,
    allowedOrigins: options.allowedOrigins,
  });
  const newServer = _serverFactory(registry, { ...options, gate }, team);
  const stateless = options.stateless === true;
  const handle = async (req: Request): Promise<Response> => {
    const caller = await check(req);
    if (caller instanceof Response) return caller;
    const { who } = caller;
    if (stateless) {
      return await serveStateless(req, gate, who, maxBody, (more) => newServer(who, more));
    }
    const res = await serveInSession(req, sessions, who, maxBody, () => newServer(who, {}));
    // An open GET stream ends once its token no longer names its identity (revoked, expired).
    return team && who ? team.watchStream(req, res, who) : res;
  };
  const listener = listenHttp({ ...options, hostname }, handle);
  listener.front.start();
  return _running(listener, sessions, path);
}

/** The handle of a started server: its address, and closing sessions, then listener. */
function _running(
  { front, httpServer }: HttpListener,
  sessions: HttpSessions,
  path: string,
): McpHttpHandle {
  const addr = front.addr;
  const shown = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  let closing: Promise<void> | undefined;
  return {
    hostname: addr.hostname,
    port: addr.port,
    url: `http://${shown}:${addr.port}${path}`,
    finished: Promise.all([httpServer.finished, front.finished]).then(() => {}),
    notifyToolsChanged: () => sessions.notifyToolsChanged(),
    close: () => {
      closing ??= (async () => {
        await sessions.closeAll();
        await httpServer.shutdown();
        front.close();
      })();
      return closing;
    },
  };
}

/** The options checked: a ConfigError for a non-loopback address without a token, bad limits. */
function _settings(options: McpHttpOptions) {
  const hostname = options.hostname ?? "127.0.0.1";
  const loopback = isLoopback(hostname);
  const token = options.token || undefined;
  if (!loopback && !token) {
    throw new ConfigError(
      `refusing to serve MCP on ${hostname} without a token: anyone who can reach it could run ` +
        "tools. Pass --token TOKEN (or set CORRAL_MCP_TOKEN), or bind 127.0.0.1",
    );
  }
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!Number.isInteger(maxBody) || maxBody <= 0) {
    throw new ConfigError(`--max-body must be a positive number of bytes, got ${maxBody}`);
  }
  const maxConcurrent = options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent <= 0) {
    throw new ConfigError(`--max-concurrent must be a positive integer, got ${maxConcurrent}`);
  }
  return { hostname, loopback, token, maxBody, maxConcurrent };
}

/**
 * A new MCP server for a caller: with identities, over only its identity's
 * tools in its workspace (`registryFor`), its calls audited as it.
 */
function _serverFactory(
  registry: McpRegistry,
  serverOptions: McpServerOptions,
  team: HttpIdentity | undefined,
): (who: Admitted | undefined, more: McpServerOptions) => CorralMcpServer {
  return (who, more) =>
    createMcpServer(who ? team!.registryFor(registry, who.identity) : registry, {
      ...serverOptions,
      ...more,
      ...(who ? { identity: who.identity.name } : {}),
    });
}
