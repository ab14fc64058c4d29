/**
 * The HTTP server of `corral mcp --http`: `node:http` (Deno's, whose parser
 * is llhttp), each request handed to a `fetch`-style handler through
 * `@hono/node-server`. The platform enforces what it can: a request head
 * must be whole within `headTimeoutMs` (`headersTimeout`, also for each
 * next request of a kept-alive connection; else 408 and close), at most 64
 * KiB (`maxHeaderSize`: 431), well-formed (llhttp refuses the rest: 400),
 * and an idle kept-alive connection closes after 5 s (`keepAliveTimeout`).
 * What it lacks is done here on its events: connections are capped in all
 * and per client address, the oldest without a whole head giving way
 * (./_front_conns.ts: 503 or 429 otherwise); a body must be whole within
 * `bodyTimeoutMs` of its head and average `minBodyRate` bytes a second once
 * `bodyGraceMs` have passed (./_body_clock.ts: 408, or a plain close when the
 * answer has begun); the client's address reaches the handler in
 * `corral-client-address` (any such header from the client is dropped).
 *
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { type BodyTiming, timeBody } from "./_body_clock.ts";
import { FrontConns } from "./_front_conns.ts";
import { answerRaw } from "./_http_refusal.ts";

/** Default of `--head-timeout`: seconds a client may take to send a request head. */
export const DEFAULT_HEAD_TIMEOUT_MS = 5_000;
/** Default of `--max-client-conns`: connections one client address may hold. */
export const DEFAULT_MAX_CONNS_PER_CLIENT = 256;
/** Default of `--max-conns`: connections the front holds at once. */
export const DEFAULT_MAX_CONNS = 1024;
/** Default of `--body-timeout`: a request body must arrive whole this soon after its head. */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;
/** Default of `--min-body-rate`: bytes a second a body must average once its grace is over. */
export const DEFAULT_MIN_BODY_RATE = 1024;
/** How long a body may arrive slower than the minimum rate at first. */
export const DEFAULT_BODY_GRACE_MS = 5_000;
/** The header that tells the handler which address a request came from. */
export const CLIENT_ADDRESS_HEADER = "corral-client-address";
/** The largest request head (request line and headers). */
export const MAX_HEAD_BYTES = 64 * 1024;
/** How long a kept-alive connection may wait for its next request. */
const _KEEP_ALIVE_MS = 5_000;

/** Options of {@link listenFront}. */
export interface HttpFrontOptions {
  hostname: string;
  port: number;
  /** A request head must be complete this long after it began (ms). */
  headTimeoutMs?: number;
  /** Connections at once from one client address. */
  maxConnsPerClient?: number;
  /** Connections at once in all. */
  maxConns?: number;
  /** A request body must be complete this long after its head (ms). */
  bodyTimeoutMs?: number;
  /** Bytes a second a body must average once `bodyGraceMs` have passed. */
  minBodyRate?: number;
  /** How long a body may be slower than `minBodyRate` at first (ms). */
  bodyGraceMs?: number;
}

/** A listening front. */
export interface HttpFront {
  /** The bound TCP address. */
  readonly addr: { hostname: string; port: number };
  /** Resolves when the server has stopped. */
  readonly finished: Promise<void>;
  /** Stop accepting; let the requests in flight end, then drop every connection. */
  close(): Promise<void>;
}

/** One connection: its slot in {@link FrontConns}, and its requests in flight. */
interface _Conn {
  id: number;
  who: string;
  inFlight: number;
}

/**
 * Listen on `hostname:port` and answer every request with `handle`;
 * rejects with the platform's error (`EADDRINUSE`, …) when it cannot bind.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listenFront } from "./_http_front.ts";
 * const front = await listenFront(
 *   { hostname: "127.0.0.1", port: 0 },
 *   (req) => Promise.resolve(new Response(req.headers.get("corral-client-address"))),
 * );
 * const res = await fetch(`http://127.0.0.1:${front.addr.port}/`, {
 *   headers: { "corral-client-address": "10.9.9.9" },
 * });
 * assert.equal(await res.text(), "127.0.0.1");
 * await front.close();
 * ```
 */
export async function listenFront(
  options: HttpFrontOptions,
  handle: (req: Request) => Promise<Response>,
): Promise<HttpFront> {
  const headMs = options.headTimeoutMs ?? DEFAULT_HEAD_TIMEOUT_MS;
  const timing: BodyTiming = {
    bodyMs: options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
    minRate: options.minBodyRate ?? DEFAULT_MIN_BODY_RATE,
    graceMs: options.bodyGraceMs ?? DEFAULT_BODY_GRACE_MS,
  };
  const conns = new FrontConns(
    options.maxConns ?? DEFAULT_MAX_CONNS,
    options.maxConnsPerClient ?? DEFAULT_MAX_CONNS_PER_CLIENT,
  );
  const server = createServer({
    headersTimeout: headMs,
    requestTimeout: 0, // the body has its own clock (./_body_clock.ts)
    keepAliveTimeout: _KEEP_ALIVE_MS,
    connectionsCheckingInterval: Math.max(50, Math.min(250, headMs / 4)),
    maxHeaderSize: MAX_HEAD_BYTES,
  });
  const held = new Map<Socket, _Conn>();
  const state = { closing: false };
  server.on("connection", (socket: Socket) => _admit(socket, conns, held));
  server.on("clientError", (err: Error & { code?: string }, socket: Socket) => {
    _clientError(err, socket, headMs);
  });
  const listener = getRequestListener(handle, {
    overrideGlobalObjects: false,
    errorHandler: (err) => _internalError(err),
  });
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const conn = held.get(req.socket as Socket);
    if (!conn) return; // refused at the door: its answer is on its way, then it closes
    _serveOne(req, res, conn, conns, timing, listener, state);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return _running(server, held, state);
}

/** Admit a new connection, or answer 429/503 and close it. */
function _admit(socket: Socket, conns: FrontConns, held: Map<Socket, _Conn>): void {
  const who = _address(socket.remoteAddress);
  socket.on("error", () => {});
  const admitted = conns.admit(who, () => socket.destroy());
  if (!admitted.ok) {
    return answerRaw(socket, admitted.status, admitted.message);
  }
  held.set(socket, { id: admitted.id, who, inFlight: 0 });
  socket.once("close", () => {
    held.delete(socket);
    conns.release(admitted.id);
  });
}

/** One request: its phase kept for eviction, its body timed, its address passed on. */
function _serveOne(
  req: IncomingMessage,
  res: ServerResponse,
  conn: _Conn,
  conns: FrontConns,
  timing: BodyTiming,
  listener: (req: IncomingMessage, res: ServerResponse) => Promise<unknown>,
  state: { closing: boolean },
): void {
  conn.inFlight++;
  conns.phase(conn.id, req.complete ? "open" : "body");
  // The client's own address header never reaches the handler; the socket's does.
  const raw = req.rawHeaders;
  for (let i = raw.length - 2; i >= 0; i -= 2) {
    if (raw[i].toLowerCase() === CLIENT_ADDRESS_HEADER) raw.splice(i, 2);
  }
  raw.push(CLIENT_ADDRESS_HEADER, conn.who);
  req.headers[CLIENT_ADDRESS_HEADER] = conn.who;
  const stop = timeBody(req, res, timing, () => conns.phase(conn.id, "open"));
  res.once("close", () => {
    stop();
    conn.inFlight--;
    if (state.closing && conn.inFlight === 0) return void req.socket.destroy();
    // Kept alive: it waits for its next head, and may give way like a new connection.
    if (!req.socket.destroyed) conns.phase(conn.id, "head");
  });
  listener(req, res).catch(() => req.socket.destroy());
}

/** A request the parser refused or a head that came too late: answered, then closed. */
function _clientError(err: Error & { code?: string }, socket: Socket, headMs: number): void {
  const busy = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || busy?.headersSent || err.code === "ECONNRESET") {
    return void socket.destroy();
  }
  if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    return answerRaw(
      socket,
      408,
      `Request timeout: no complete request head within ${headMs / 1000} s (--head-timeout)`,
    );
  }
  if (err.code === "HPE_HEADER_OVERFLOW") {
    return answerRaw(socket, 431, `Request header fields too large (over ${MAX_HEAD_BYTES} bytes)`);
  }
  answerRaw(socket, 400, `Bad Request: not a valid HTTP/1.1 request (${err.code ?? err.message})`);
}

function _internalError(err: unknown): Response {
  const message = (err as Error)?.message ?? String(err);
  return Response.json(
    { jsonrpc: "2.0", error: { code: -32000, message: `Bad Request: ${message}` }, id: null },
    { status: (err as Error)?.name === "RequestError" ? 400 : 500 },
  );
}

/** The handle: closing lets requests in flight end, then drops every connection. */
function _running(
  server: Server,
  held: Map<Socket, _Conn>,
  state: { closing: boolean },
): HttpFront {
  const address = server.address() as { address: string; port: number };
  const finished = new Promise<void>((resolve) => server.once("close", () => resolve()));
  let closing: Promise<void> | undefined;
  return {
    addr: { hostname: address.address, port: address.port },
    finished,
    close: () => {
      closing ??= (async () => {
        state.closing = true;
        server.close();
        // Idle connections go now; the others once their last response has ended.
        const ends = [...held.keys()].map((s) => new Promise((r) => s.once("close", r)));
        for (const [socket, c] of held) if (c.inFlight === 0) socket.destroy();
        await Promise.all([finished, ...ends]);
      })();
      return closing;
    },
  };
}

/** A socket's remote address, an IPv4-mapped IPv6 one as plain IPv4. */
function _address(remote: string | undefined): string {
  if (!remote) return "(unknown)";
  return remote.startsWith("::ffff:") && remote.includes(".") ? remote.slice(7) : remote;
}
