/**
 * The TCP front of `corral mcp --http`: Deno.serve has no limit on how long
 * a request head or body may take nor on connections per client, so corral
 * accepts the connections itself (./front_conns.ts: at most `maxConns`, and
 * `maxConnsPerClient` per client address; beyond either, the oldest
 * connection that has not sent a whole head gives way, else 503 or 429).
 * Each connection must send its whole request head within `headTimeoutMs`
 * (else 408 and close; a head over 64 KiB gets 431), then its whole body
 * within `bodyTimeoutMs`, at `minBodyRate` bytes a second or more once
 * `bodyGraceMs` have passed (else 408, or a plain close when the answer has
 * begun). The head is then passed, with `Connection: close` and the client's
 * address in `corral-client-address` (any such header from the client is
 * dropped), to the HTTP server listening on a private unix socket, and the
 * bytes flow both ways until it ends the response: one request per
 * connection, so every request's head and body are timed.
 *
 * @module
 */
import { closeConn, copyConn, writeAll } from "../guard/conn_io.ts";
import { bodyFraming, BodyMeter } from "../guard/http_body.ts";
import { readHttpHead } from "../guard/http_head.ts";
import { PeerClock, peerDeadline } from "../guard/peer_clock.ts";
import { join } from "node:path";
import { FrontConns } from "./front_conns.ts";

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
/** The header that tells the server behind the front which address a request came from. */
export const CLIENT_ADDRESS_HEADER = "corral-client-address";
const _MAX_HEAD = 64 * 1024;

/** Options of {@link listenFront}. */
export interface HttpFrontOptions {
  hostname: string;
  port: number;
  /** A request head must be complete this long after the connection opened (ms). */
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

/** The timing rules of one connection. */
interface _Timing {
  headMs: number;
  bodyMs: number;
  minRate: number;
  graceMs: number;
}

/** A listening front; {@link HttpFront.start} once the server listens on {@link HttpFront.socket}. */
export interface HttpFront {
  /** The bound TCP address. */
  readonly addr: Deno.NetAddr;
  /** The unix socket the HTTP server must listen on (in a private 0700 folder). */
  readonly socket: string;
  /** Start accepting connections. */
  start(): void;
  /** Resolves when the front has stopped. */
  readonly finished: Promise<void>;
  /** Stop accepting, drop every connection, remove the socket's folder. */
  close(): void;
}

/**
 * Bind `hostname:port` (throws Deno's error when it cannot) and make the
 * private socket path; accept nothing until {@link HttpFront.start}.
 *
 * @example
 * ```ts ignore
 * const front = listenFront({ hostname: "127.0.0.1", port: 0 });
 * const server = Deno.serve({ path: front.socket }, handler);
 * front.start();
 * ```
 */
export function listenFront(options: HttpFrontOptions): HttpFront {
  const timing: _Timing = {
    headMs: options.headTimeoutMs ?? DEFAULT_HEAD_TIMEOUT_MS,
    bodyMs: options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS,
    minRate: options.minBodyRate ?? DEFAULT_MIN_BODY_RATE,
    graceMs: options.bodyGraceMs ?? DEFAULT_BODY_GRACE_MS,
  };
  const conns = new FrontConns(
    options.maxConns ?? DEFAULT_MAX_CONNS,
    options.maxConnsPerClient ?? DEFAULT_MAX_CONNS_PER_CLIENT,
  );
  const listener = Deno.listen({ hostname: options.hostname, port: options.port });
  const dir = Deno.makeTempDirSync({ prefix: "corral-http-" }); // 0700: only this user
  const socket = join(dir, "http.sock");
  const open = new Set<Deno.Conn>();
  let finished: Promise<void> = Promise.resolve();
  const serve = async (conn: Deno.Conn) => {
    const who = (conn.remoteAddr as Deno.NetAddr).hostname;
    const admitted = conns.admit(who, () => closeConn(conn));
    if (!admitted.ok) {
      await _answer(conn, admitted.status, admitted.message);
      return closeConn(conn);
    }
    open.add(conn);
    try {
      await _relay(conn, socket, who, timing, (phase) => conns.phase(admitted.id, phase));
    } finally {
      open.delete(conn);
      conns.release(admitted.id);
      closeConn(conn);
    }
  };
  return {
    addr: listener.addr as Deno.NetAddr,
    socket,
    get finished() {
      return finished;
    },
    start() {
      finished = (async () => {
        try {
          for await (const conn of listener) serve(conn).catch(() => closeConn(conn));
        } catch { /* closed */ }
      })();
    },
    close() {
      try {
        listener.close();
      } catch { /* already closed */ }
      for (const c of open) closeConn(c);
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch { /* already gone */ }
    },
  };
}

/** Read the head in time, then relay the connection (its body timed) to the server on `socket`. */
async function _relay(
  conn: Deno.Conn,
  socket: string,
  who: string,
  timing: _Timing,
  phase: (p: "body" | "open") => void,
): Promise<void> {
  let late = false;
  // The head's time is the client's, never a stall of this process (core/guard/peer_clock.ts).
  const timer = peerDeadline(timing.headMs, () => {
    late = true;
    _answer(
      conn,
      408,
      `Request timeout: no complete request head within ${timing.headMs / 1000} s ` +
        "(--head-timeout)",
    ).finally(() => closeConn(conn));
  });
  const head = await readHttpHead(conn, _MAX_HEAD).finally(() => timer.stop());
  if (late) return;
  if (head === "too large") {
    return await _answer(conn, 431, `Request header fields too large (over ${_MAX_HEAD} bytes)`);
  }
  if (!head) return;
  const lines = new TextDecoder().decode(head.head).split("\r\n");
  if (!/^[A-Z]+ \S+ HTTP\/1\.[01]$/.test(lines[0])) {
    return await _answer(conn, 400, "Bad Request: not an HTTP/1.1 request line");
  }
  const framing = bodyFraming(lines);
  if (framing.kind === "bad") return await _answer(conn, 400, `Bad Request: ${framing.why}`);
  const meter = new BodyMeter(framing);
  phase(meter.feed(head.rest) ? "open" : "body");
  const kept = lines.filter((l, i) =>
    i === 0 || !/^(connection|keep-alive|corral-client-address)\s*:/i.test(l)
  );
  const server = await Deno.connect({ transport: "unix", path: socket });
  const sent = { bytes: 0 };
  const body = _bodyClock(conn, server, meter, timing, sent);
  try {
    await writeAll(
      server,
      new TextEncoder().encode(
        `${kept.join("\r\n")}\r\n${CLIENT_ADDRESS_HEADER}: ${who}\r\nConnection: close\r\n\r\n`,
      ),
    );
    if (head.rest.length) await writeAll(server, head.rest);
    await Promise.race([
      _fromClient(conn, server, meter, () => phase("open")),
      copyConn(server, conn, 64 * 1024, (n) => sent.bytes += n),
    ]);
  } finally {
    body.stop();
    closeConn(server);
  }
}

/**
 * The body's clock: once its time is up, or its average rate is below the
 * minimum after the grace, the client gets 408 (unless the answer has
 * begun) and both sides are closed.
 */
function _bodyClock(
  conn: Deno.Conn,
  server: Deno.Conn,
  meter: BodyMeter,
  t: _Timing,
  sent: { bytes: number },
): { stop(): void } {
  const every = Math.min(250, t.graceMs, t.bodyMs);
  const clock = new PeerClock(every);
  const tick = setInterval(() => {
    if (meter.done) return clearInterval(tick);
    if (!clock.tick()) return; // this process stalled: what arrived meanwhile is read first
    const elapsed = clock.elapsed();
    let why = "";
    if (elapsed >= t.bodyMs) {
      why = `no complete request body within ${t.bodyMs / 1000} s (--body-timeout)`;
    } else if (elapsed >= t.graceMs && meter.received < (t.minRate * elapsed) / 1000) {
      why = `the request body arrives slower than ${t.minRate} bytes a second (--min-body-rate)`;
    }
    if (!why) return;
    clearInterval(tick);
    const close = () => {
      closeConn(server);
      closeConn(conn);
    };
    if (sent.bytes > 0) return close();
    _answer(conn, 408, `Request timeout: ${why}`).finally(close);
  }, every);
  return { stop: () => clearInterval(tick) };
}

/**
 * Copy the client's bytes to the server, metering the body; the client's
 * end only half-closes the server side (the response decides when the
 * relay ends).
 */
async function _fromClient(
  from: Deno.Conn,
  to: Deno.Conn,
  meter: BodyMeter,
  whole: () => void,
): Promise<void> {
  await copyConn(from, to, 64 * 1024, undefined, (chunk) => {
    if (!meter.done && meter.feed(chunk)) whole();
  });
  try {
    await to.closeWrite();
  } catch { /* gone */ }
  await new Promise(() => {});
}

const _PHRASE: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  503: "Service Unavailable",
};

/** A JSON-RPC error answer, as the server's own refusals look, then the connection ends. */
async function _answer(conn: Deno.Conn, status: number, message: string): Promise<void> {
  const body = new TextEncoder().encode(
    JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }),
  );
  const head = `HTTP/1.1 ${status} ${_PHRASE[status]}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n${
      status === 429 || status === 503 ? "Retry-After: 5\r\n" : ""
    }` +
    "Connection: close\r\n\r\n";
  try {
    await writeAll(conn, new TextEncoder().encode(head));
    await writeAll(conn, body);
  } catch { /* gone */ }
}
