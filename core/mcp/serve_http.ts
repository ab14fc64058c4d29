/**
 * MCP over Streamable HTTP at `/mcp`, on `node:http`: sessions (or
 * none, `stateless`, for load balancers), and the checks every request
 * passes first: Host and Origin against DNS rebinding, the bearer token,
 * the path and the body size; then, with identities, the identity's
 * connections, its calls per minute (each call counts) and its sessions.
 *
 * Put together here from one file per concern: listening
 * (./_http_listener.ts, ./_http_front.ts, ./_listen_address.ts), the checks
 * (./_request_checks.ts, identities in ./http_identity.ts, their caps in
 * ./_identity_caps.ts), the body (./_rpc_body.ts), sessions
 * (./_http_sessions.ts, ./_session_request.ts) or none
 * (./_stateless_request.ts), the instance's call gate (./_call_gate.ts).
 *
 * @module
 */
import { ConfigError } from "../tool/mod.ts";
import { CallGate, DEFAULT_MAX_QUEUE } from "./_call_gate.ts";
import { ticketAuth } from "./_call_ticket.ts";
import type { Admitted, HttpIdentity } from "./http_identity.ts";
import type { HttpFront } from "./_http_front.ts";
import { listenHttp } from "./_http_listener.ts";
import { refuse } from "./_http_refusal.ts";
import { DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_MS, HttpSessions } from "./_http_sessions.ts";
import {
  type IdentityCaps,
  identityCaps,
  type IdentityDefaults,
  identityDefaults,
} from "./_identity_caps.ts";
import { isLoopback } from "./_listen_address.ts";
import {
  type CorralMcpServer,
  createMcpServer,
  DEFAULT_MAX_CONCURRENT,
  type McpHandle,
  type McpRegistry,
  type McpServerOptions,
} from "./mcp_server.ts";
import { requestChecks } from "./_request_checks.ts";
import { InputRounds } from "./_input_rounds.ts";
import { TaskStore } from "./tasks/_task_store.ts";
import { ModernRequests } from "./_modern_request.ts";
import { paramHeaderRefusal } from "./_param_headers.ts";
import { readRpcBody, type RpcBody } from "./_rpc_body.ts";
import { serveInSession, sessionPrincipal } from "./_session_request.ts";
import { serveStateless, statelessBusy } from "./_stateless_request.ts";

export { isLoopback, parseListenAddress } from "./_listen_address.ts";
export { DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_MS } from "./_http_sessions.ts";

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
  /** Connections at once in all (default 1024); beyond it 503, closed. */
  maxConns?: number;
  /** A request body must be whole this long after its head (default 30 s); else 408. */
  bodyTimeoutMs?: number;
  /** Bytes a second a body must average after 5 s (default 1024); else 408. */
  minBodyRate?: number;
  /** What one identity may hold at once, for identities without limits of their own. */
  identityDefaults?: Partial<IdentityDefaults>;
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
 * Serve over Streamable HTTP at `/mcp` (./_http_front.ts). Binding a
 * non-loopback address without a token throws a {@link ConfigError}.
 * Requests are checked in this order: Host and Origin (403), bearer token
 * (401), path (404), body size (413), the identity's connections (429),
 * its calls per minute (429).
 */
export async function serveHttp(
  registry: McpRegistry,
  options: McpHttpOptions,
): Promise<McpHttpHandle> {
  const settings = _settings(options);
  const ctx = _context(registry, options, settings);
  const front = await listenHttp(
    { ...options, hostname: settings.hostname },
    (req) => _handle(ctx, req),
  );
  return _running(front, ctx.sessions, ctx.path, ctx.team, ctx.modern);
}

/** What every request of one server shares. */
interface _Ctx {
  registry: McpRegistry;
  team: McpHttpOptions["team"];
  path: string;
  maxBody: number;
  stateless: boolean;
  gate: CallGate;
  defaults: ReturnType<typeof identityDefaults>;
  sessions: HttpSessions;
  check: ReturnType<typeof requestChecks>;
  newServer: ReturnType<typeof _serverFactory>;
  modern: ModernRequests;
  /** Requests in flight per identity. */
  conns: Map<string, number>;
}

function _context(
  registry: McpRegistry,
  options: McpHttpOptions,
  { loopback, token, maxBody, maxConcurrent }: ReturnType<typeof _settings>,
): _Ctx {
  // One gate for the whole instance: every session and every stateless request.
  const gate = new CallGate(maxConcurrent, options.maxQueue ?? DEFAULT_MAX_QUEUE);
  const path = options.path ?? "/mcp";
  const team = options.team;
  const defaults = identityDefaults(maxConcurrent, options.identityDefaults);
  // Telemetry: the identities' /metrics shows the calls waiting at the gate.
  team?.observeGate(gate);
  const sessions = new HttpSessions(
    options.maxSessions ?? DEFAULT_MAX_SESSIONS,
    options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS,
    team,
  );
  const check = requestChecks({
    loopback,
    token,
    team,
    path,
    maxBody,
    allowedOrigins: options.allowedOrigins,
  });
  // One set of parked calls for the instance: a 2026-07-28 client's rounds reach it again.
  const tasks = new TaskStore();
  const newServer = _serverFactory(
    registry,
    { ...options, gate, rounds: new InputRounds(), tasks },
    team,
  );
  const modern = new ModernRequests(
    (who, more) => newServer(who, who ? identityCaps(who.identity, defaults) : undefined, more),
    maxBody,
    tasks,
  );
  const stateless = options.stateless === true;
  return {
    registry,
    team,
    path,
    maxBody,
    stateless,
    gate,
    defaults,
    sessions,
    check,
    newServer,
    modern,
    conns: new Map(),
  };
}

/** One request: checked, counted in its identity's requests in flight, served. */
async function _handle(ctx: _Ctx, req: Request): Promise<Response> {
  const caller = await ctx.check(req);
  if (caller instanceof Response) return caller;
  const { who } = caller;
  if (ctx.stateless) {
    const busy = statelessBusy(req, ctx.gate);
    if (busy) return busy;
  }
  const caps = who ? identityCaps(who.identity, ctx.defaults) : undefined;
  // An identity holds at most its own number of requests in flight (open streams too).
  const release = who && caps ? _holdConn(ctx.conns, who, caps) : () => {};
  if (typeof release !== "function") {
    // Audited (counted per window) like a refused call: the request's calls are unread.
    ctx.team!.registryFor(ctx.registry, who!.identity)
      .auditRefusal?.("(request)", null, { session: "(none)" }, "connections", release.message)
      .catch(() => {});
    return release.response;
  }
  let res: Response;
  try {
    res = await _serve(ctx, req, who, caps);
  } catch (err) {
    release();
    throw err;
  }
  return _whenDone(res, release);
}

/** Read the body, admit its calls (room, rate), and hand the request to its kind of serving. */
async function _serve(
  ctx: _Ctx,
  req: Request,
  who?: Admitted,
  caps?: IdentityCaps,
): Promise<Response> {
  let body: RpcBody | undefined;
  if (req.method === "POST") {
    const read = await readRpcBody(req, ctx.maxBody);
    if (read instanceof Response) return read;
    body = read;
  }
  const ticket = await _admitCalls(ctx, req, body, who, caps);
  if (ticket instanceof Response) return ticket;
  const authInfo = ticketAuth(ticket);
  const endPrincipal = (p: string) =>
    who
      ? ctx.team!.registryFor(ctx.registry, who.identity).endPrincipal?.(p) ?? Promise.resolve()
      : Promise.resolve();
  // 2026-07-28: no session; the revision and capabilities come with each request.
  if (body && await ModernRequests.isModern(req, body)) {
    const view = who ? ctx.team!.registryFor(ctx.registry, who.identity) : ctx.registry;
    const mismatch = paramHeaderRefusal(
      req,
      body.parsed,
      (name) => view.list().find((t) => t.name === name)?.inputSchema,
    );
    if (mismatch) return mismatch;
    return await ctx.modern.serve(req, body, {
      who,
      authInfo,
      watch: ctx.team?.watch,
      endPrincipal,
    });
  }
  if (ctx.stateless) {
    return await serveStateless(
      req,
      { who, body, authInfo, watch: ctx.team?.watch, endPrincipal },
      (more) => ctx.newServer(who, caps, more),
    );
  }
  const res = await serveInSession(
    { req, who, body, authInfo, maxSessions: caps?.sessions },
    ctx.sessions,
    () => ctx.newServer(who, caps, {}),
  );
  // An open GET stream ends once its token no longer names its identity (revoked, expired).
  return ctx.team && who ? ctx.team.watchStream(req, res, who) : res;
}

/**
 * Refused whole, before any call is dispatched: calls of a caller whose
 * queue is full (a flood costs one answer a request, not one a call), and
 * calls beyond its rate. Else the caller's ticket (undefined without one).
 */
async function _admitCalls(
  ctx: _Ctx,
  req: Request,
  body: RpcBody | undefined,
  who?: Admitted,
  caps?: IdentityCaps,
) {
  const refused = (reason: string, message: string, retry: number) => {
    // Each refused call is audited (counted per window) under the caller's own principal.
    const view = ctx.team!.registryFor(ctx.registry, who!.identity);
    const session = ctx.stateless
      ? `identity:${who!.identity.name}`
      : sessionPrincipal(req, ctx.sessions, who);
    for (const c of body!.calls) {
      view.auditRefusal?.(c.name, c.args, { session }, reason, message).catch(() => {});
    }
    return refuse(429, message, { "Retry-After": String(retry) });
  };
  // A caller with no room waits a moment for some (its flood slowed to what its calls free).
  if (who && caps && body?.calls.length && !(await ctx.gate.roomFor(caps.gate, _ROOM_WAIT_MS))) {
    return refused("limits", `Too many requests: ${ctx.gate.refusal(caps.gate)}`, 1);
  }
  const ticket = who && ctx.team && body
    ? await ctx.team.takeCalls(who, body.calls.length)
    : undefined;
  if (ticket instanceof Response) return ticket;
  if (ticket && ticket.granted === 0) {
    return refused("rate_limit", ticket.message, ticket.retryAfterSeconds);
  }
  return ticket;
}

/** How long a request of calls waits for room in its caller's queue before its 429. */
const _ROOM_WAIT_MS = 1_000;

/** Count a request of `who` in flight: its release, or a 429 (and why) beyond its connections. */
function _holdConn(
  conns: Map<string, number>,
  who: Admitted,
  caps: IdentityCaps,
): (() => void) | { response: Response; message: string } {
  const name = who.identity.name;
  const n = conns.get(name) ?? 0;
  if (n >= caps.connections) {
    const message = `Too many connections: "${name}" may have ${caps.connections} requests ` +
      `in flight (identities.${name}.limits.connections or --max-identity-conns); retry later`;
    return { response: refuse(429, message, { "Retry-After": "1" }), message };
  }
  conns.set(name, n + 1);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const left = (conns.get(name) ?? 1) - 1;
    if (left > 0) conns.set(name, left);
    else conns.delete(name);
  };
}

/** `res`, with `done` called once its body has ended (or was cancelled), or at once without one. */
function _whenDone(res: Response, done: () => void): Response {
  if (!res.body) {
    done();
    return res;
  }
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      try {
        const { value, done: end } = await reader.read();
        if (end) {
          done();
          c.close();
        } else c.enqueue(value);
      } catch (err) {
        done();
        c.error(err);
      }
    },
    cancel(reason) {
      done();
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
}

/** The handle of a started server: its address, and closing sessions, then listener. */
function _running(
  front: HttpFront,
  sessions: HttpSessions,
  path: string,
  team: HttpIdentity | undefined,
  modern: ModernRequests,
): McpHttpHandle {
  const addr = front.addr;
  const shown = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  let closing: Promise<void> | undefined;
  return {
    hostname: addr.hostname,
    port: addr.port,
    url: `http://${shown}:${addr.port}${path}`,
    finished: front.finished,
    notifyToolsChanged: () => {
      modern.notifyToolsChanged();
      return sessions.notifyToolsChanged();
    },
    close: () => {
      closing ??= (async () => {
        team?.close();
        await modern.close();
        await sessions.closeAll();
        await front.close();
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
 * tools in its workspace (`registryFor`), its calls audited as it, in its
 * own queue at the gate.
 */
function _serverFactory(
  registry: McpRegistry,
  serverOptions: McpServerOptions,
  team: HttpIdentity | undefined,
): (
  who: Admitted | undefined,
  caps: IdentityCaps | undefined,
  more: McpServerOptions,
) => CorralMcpServer {
  return (who, caps, more) =>
    createMcpServer(who ? team!.registryFor(registry, who.identity) : registry, {
      ...serverOptions,
      ...more,
      ...(who ? { identity: who.identity.name } : {}),
      ...(caps ? { caller: caps.gate } : {}),
    });
}
