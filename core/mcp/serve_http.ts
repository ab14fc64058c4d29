/**
 * MCP over Streamable HTTP at `/mcp`, with `Deno.serve`: sessions (or
 * none, `stateless`, for load balancers), and the checks every request
 * passes first: Host and Origin against DNS rebinding, the bearer token,
 * the path and the body size.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { ConfigError } from "../tool/errors.ts";
import { type HttpFront, listenFront } from "./http_front.ts";
import type { Admitted, HttpIdentity } from "./http_identity.ts";
import { CallGate, DEFAULT_MAX_QUEUE } from "./call_gate.ts";
import {
  type CorralMcpServer,
  createMcpServer,
  DEFAULT_MAX_CONCURRENT,
  type McpHandle,
  type McpRegistry,
  type McpServerOptions,
} from "./mcp_server.ts";

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

/** Default of {@link McpHttpOptions.maxSessions}. */
export const DEFAULT_MAX_SESSIONS = 256;
/** Default of {@link McpHttpOptions.sessionIdleMs}: 15 minutes. */
export const DEFAULT_SESSION_IDLE_MS = 15 * 60_000;

/** A running Streamable HTTP server. */
export interface McpHttpHandle extends McpHandle {
  /** The bound address. */
  readonly hostname: string;
  /** The bound port. */
  readonly port: number;
  /** The endpoint, e.g. `http://127.0.0.1:8123/mcp`. */
  readonly url: string;
}

/** Parse `--http [HOST:]PORT` (`8080`, `0.0.0.0:8080`, `[::1]:8080`). */
export function parseListenAddress(text: string): { hostname: string; port: number } {
  const m = /^(?:(\[[0-9a-fA-F:.]+\]|[^:[\]]+):)?(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) {
    throw new ConfigError(
      `--http needs [HOST:]PORT, like 8080 or 127.0.0.1:8080 or [::1]:8080, got "${text}"`,
    );
  }
  const host = m[1] ?? "127.0.0.1";
  return { hostname: host.startsWith("[") ? host.slice(1, -1) : host, port };
}

/** True for names and addresses that only reach this machine. */
export function isLoopback(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

interface _Session {
  mcp: CorralMcpServer;
  transport: WebStandardStreamableHTTPServerTransport;
  /** `performance.now()` of its last request. */
  seen: number;
  /** The identity that opened it (with identities). */
  identity?: string;
}

/**
 * Serve over Streamable HTTP at `/mcp` with `Deno.serve`. Binding a
 * non-loopback address without a token throws a {@link ConfigError}.
 * Requests are checked in this order: Host and Origin (403), bearer token
 * (401), path (404), body size (413).
 */
export function serveHttp(registry: McpRegistry, options: McpHttpOptions): McpHttpHandle {
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
  // One gate for the whole instance: every session and every stateless request.
  const gate = new CallGate(maxConcurrent, options.maxQueue ?? DEFAULT_MAX_QUEUE);
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const idleMs = options.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS;
  const path = options.path ?? "/mcp";
  const allowedOrigins = new Set((options.allowedOrigins ?? []).map((o) => o.replace(/\/$/, "")));
  const sessions = new Map<string, _Session>();
  const stateless = options.stateless === true;
  const serverOptions: McpServerOptions = { ...options, gate };
  const team = options.team;
  team?.observeGate(gate);
  // The registry a caller's session sees: only its identity's tools, in its workspace.
  const registryOf = (who?: Admitted) => who ? team!.registryFor(registry, who.identity) : registry;
  let opening = 0;
  const closeSession = (sid: string) => {
    const s = sessions.get(sid);
    if (!s) return;
    sessions.delete(sid);
    s.mcp.close().catch(() => {});
  };
  const expire = () => {
    const now = performance.now();
    for (const [sid, s] of sessions) if (now - s.seen > idleMs) closeSession(sid);
  };
  const sweeper = setInterval(expire, Math.max(1000, Math.min(idleMs / 4, 30_000)));
  Deno.unrefTimer(sweeper);
  const expected = token ? new TextEncoder().encode(`Bearer ${token}`) : undefined;

  const refuse = (status: number, message: string, headers: Record<string, string> = {}) =>
    Response.json(
      { jsonrpc: "2.0", error: { code: -32000, message }, id: null },
      { status, headers },
    );

  const originAllowed = (origin: string): boolean => {
    if (allowedOrigins.has(origin)) return true;
    try {
      const u = new URL(origin);
      return loopback && isLoopback(u.hostname) &&
        (u.protocol === "http:" || u.protocol === "https:");
    } catch {
      return false;
    }
  };

  const handle = async (req: Request): Promise<Response> => {
    // DNS rebinding: a loopback server only answers to loopback names.
    const host = req.headers.get("host") ?? "";
    if (loopback) {
      let name = "";
      try {
        name = new URL(`http://${host}`).hostname;
      } catch { /* malformed: refused below */ }
      if (!isLoopback(name)) return refuse(403, `Forbidden: Host "${host}" is not allowed`);
    }
    const origin = req.headers.get("origin");
    if (origin !== null && !originAllowed(origin)) {
      return refuse(403, `Forbidden: Origin "${origin}" is not allowed`);
    }
    let who: Admitted | undefined;
    if (team) {
      const answered = await team.route(req, path) ?? await team.admit(req, path, maxBody);
      if (answered instanceof Response) return answered;
      who = answered;
    } else if (
      expected &&
      !_sameBytes(new TextEncoder().encode(req.headers.get("authorization") ?? ""), expected)
    ) {
      return refuse(401, "Unauthorized: send Authorization: Bearer <token>", {
        "WWW-Authenticate": 'Bearer realm="corral"',
      });
    }
    if (new URL(req.url).pathname !== path) {
      return refuse(404, `Not found: the endpoint is ${path}`);
    }
    const length = Number(req.headers.get("content-length") ?? "0");
    if (length > maxBody) {
      return refuse(413, `Payload too large: ${length} bytes, limit ${maxBody} (--max-body)`);
    }
    const transportOptions = { maxRequestBodySize: maxBody };
    if (stateless) {
      if (req.method !== "POST") {
        return refuse(405, "Method not allowed: a stateless server only takes POST", {
          Allow: "POST",
        });
      }
      // Beyond the queue a request is refused here (its body unread), so that a load
      // balancer can retry elsewhere.
      if (gate.full) {
        return refuse(429, "Too many requests: every slot and the queue are full; retry", {
          "Retry-After": "1",
        });
      }
      // A stateless caller is its bearer token: its requests share sandboxes, no one else's do.
      // With identities, a stateless caller is its identity (a JWT may be renewed).
      const principal = who
        ? `identity:${who.identity.name}`
        : await _callerKey(req.headers.get("authorization"));
      const mcp = createMcpServer(registryOf(who), {
        ...serverOptions,
        elicitation: false,
        principal,
        ...(who ? { identity: who.identity.name } : {}),
      });
      const transport = new WebStandardStreamableHTTPServerTransport({
        ...transportOptions,
        sessionIdGenerator: undefined,
        // One JSON answer per request, no event stream: a replica that dies mid-call
        // gives the balancer and the client an error, never a stream left open.
        enableJsonResponse: true,
      });
      await mcp.connect(transport);
      return await transport.handleRequest(req);
    }
    const id = req.headers.get("mcp-session-id");
    if (id !== null) {
      let session = sessions.get(id);
      // A session belongs to the identity that opened it: another one does not find it.
      if (session && who && session.identity !== who.identity.name) session = undefined;
      if (session) session.seen = performance.now();
      if (!session) {
        return Response.json(
          { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null },
          { status: 404 },
        );
      }
      return await session.transport.handleRequest(req);
    }
    if (req.method !== "POST") {
      return refuse(400, "Bad Request: no Mcp-Session-Id header; initialize a session first");
    }
    // Sessions being opened count too: a burst of initializations cannot overrun the cap.
    if (sessions.size + opening >= maxSessions) expire();
    if (sessions.size + opening >= maxSessions) {
      return refuse(503, `Too many sessions (${maxSessions}, --max-sessions); retry later`, {
        "Retry-After": "5",
      });
    }
    const mcp = createMcpServer(
      registryOf(who),
      who ? { ...serverOptions, identity: who.identity.name } : serverOptions,
    );
    const transport: WebStandardStreamableHTTPServerTransport =
      new WebStandardStreamableHTTPServerTransport({
        ...transportOptions,
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sid) =>
          void sessions.set(sid, {
            mcp,
            transport,
            seen: performance.now(),
            identity: who?.identity.name,
          }),
        // DELETE ends the session: its sandboxes close, with everything they started.
        onsessionclosed: (sid) => closeSession(sid),
      });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    opening++;
    try {
      await mcp.connect(transport);
      return await transport.handleRequest(req);
    } finally {
      opening--;
    }
  };

  let httpServer: Deno.HttpServer<Deno.UnixAddr>;
  let front: HttpFront;
  try {
    // corral's own TCP front times request heads and caps connections per client
    // (./http_front.ts); Deno.serve answers behind it on a private unix socket.
    const { headTimeoutMs, maxConnsPerClient } = options;
    front = listenFront({ hostname, port: options.port, headTimeoutMs, maxConnsPerClient });
    httpServer = Deno.serve({
      path: front.socket,
      onListen: () => {/* the caller prints the URL */},
      onError: (err) => refuse(500, `Internal error: ${(err as Error)?.message ?? err}`),
    }, async (req) => _closeOn413(req, await handle(req)));
  } catch (err) {
    if (
      err instanceof Deno.errors.AddrInUse || err instanceof Deno.errors.PermissionDenied ||
      err instanceof Deno.errors.AddrNotAvailable || err instanceof Deno.errors.NotCapable
    ) {
      throw new ConfigError(
        `cannot listen on ${hostname}:${options.port}: ${(err as Error).message}`,
      );
    }
    throw err;
  }
  front.start();
  const addr = front.addr;
  const shown = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  let closing: Promise<void> | undefined;
  return {
    hostname: addr.hostname,
    port: addr.port,
    url: `http://${shown}:${addr.port}${path}`,
    finished: Promise.all([httpServer.finished, front.finished]).then(() => {}),
    notifyToolsChanged: async () => {
      await Promise.all([...sessions.values()].map((s) => s.mcp.notifyToolsChanged()));
    },
    close: () => {
      clearInterval(sweeper);
      closing ??= (async () => {
        const open = [...sessions.values()];
        sessions.clear();
        await Promise.all(open.map((s) => s.mcp.close().catch(() => {})));
        await httpServer.shutdown();
        front.close();
      })();
      return closing;
    },
  };
}

/**
 * A 413 ends the TCP connection: the rest of an oversized (chunked) body is
 * never read. Deno.serve keeps a connection open while a request body is
 * unread, `connection: close` notwithstanding, so the answer's body ends in
 * an error after its text, which makes the server drop the connection.
 */
function _closeOn413(req: Request, res: Response): Response {
  if (res.status !== 413) return res;
  if (req.body && !req.body.locked) req.body.cancel().catch(() => {});
  let text: Promise<Uint8Array> | undefined;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (!text) {
        text = res.bytes();
        c.enqueue(await text);
      } else c.error(new Error("oversized request: connection closed"));
    },
  });
  const headers = new Headers(res.headers);
  headers.set("connection", "close");
  headers.delete("content-length");
  return new Response(body, { status: 413, statusText: res.statusText, headers });
}

/** The principal of a stateless caller: a digest of its credentials (never the token itself). */
async function _callerKey(authorization: string | null): Promise<string> {
  if (!authorization) return "caller:anonymous";
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(authorization));
  return `caller:${
    Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("")
  }`;
}

function _sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  // Length leaks, content does not: compare every byte whatever the first difference.
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a[i] ?? 0) ^ b[i];
  return diff === 0;
}
