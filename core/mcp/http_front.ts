/**
 * The TCP front of `corral mcp --http`: Deno.serve has no limit on how long
 * a request head may take nor on connections per client, so corral accepts
 * the connections itself. Each client address holds at most
 * `maxConnsPerClient` connections (beyond: 429 and close); each connection
 * must send its whole request head within `headTimeoutMs` (else 408 and
 * close; a head over 64 KiB gets 431). The head is then passed, with
 * `Connection: close`, to the HTTP server listening on a private unix socket,
 * and the bytes flow both ways until it ends the response: one request per
 * connection, so every request's head is timed.
 *
 * @module
 */
import { closeConn, copyConn, writeAll } from "../guard/conn_io.ts";
import { readHttpHead } from "../guard/http_head.ts";
import { join } from "node:path";

/** Default of `--head-timeout`: seconds a client may take to send a request head. */
export const DEFAULT_HEAD_TIMEOUT_MS = 5_000;
/** Default of `--max-client-conns`: connections one client address may hold. */
export const DEFAULT_MAX_CONNS_PER_CLIENT = 256;
const _MAX_HEAD = 64 * 1024;

/** Options of {@link listenFront}. */
export interface HttpFrontOptions {
  hostname: string;
  port: number;
  /** A request head must be complete this long after the connection opened (ms). */
  headTimeoutMs?: number;
  /** Connections at once from one client address. */
  maxConnsPerClient?: number;
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
  const headMs = options.headTimeoutMs ?? DEFAULT_HEAD_TIMEOUT_MS;
  const cap = options.maxConnsPerClient ?? DEFAULT_MAX_CONNS_PER_CLIENT;
  const listener = Deno.listen({ hostname: options.hostname, port: options.port });
  const dir = Deno.makeTempDirSync({ prefix: "corral-http-" }); // 0700: only this user
  const socket = join(dir, "http.sock");
  const perClient = new Map<string, number>();
  const open = new Set<Deno.Conn>();
  let finished: Promise<void> = Promise.resolve();
  const serve = async (conn: Deno.Conn) => {
    const who = (conn.remoteAddr as Deno.NetAddr).hostname;
    const n = (perClient.get(who) ?? 0) + 1;
    if (n > cap) {
      await _answer(
        conn,
        429,
        `Too many connections from ${who}: ${cap} at once (--max-client-conns); retry later`,
      );
      return closeConn(conn);
    }
    perClient.set(who, n);
    open.add(conn);
    try {
      await _relay(conn, socket, headMs);
    } finally {
      open.delete(conn);
      const left = (perClient.get(who) ?? 1) - 1;
      if (left > 0) perClient.set(who, left);
      else perClient.delete(who);
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

/** Read the head in time, then relay the connection to the server on `socket`. */
async function _relay(conn: Deno.Conn, socket: string, headMs: number): Promise<void> {
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    _answer(
      conn,
      408,
      `Request timeout: no complete request head within ${headMs / 1000} s ` +
        "(--head-timeout)",
    ).finally(() => closeConn(conn));
  }, headMs);
  const head = await readHttpHead(conn, _MAX_HEAD).finally(() => clearTimeout(timer));
  if (late) return;
  if (head === "too large") {
    return await _answer(conn, 431, `Request header fields too large (over ${_MAX_HEAD} bytes)`);
  }
  if (!head) return;
  const lines = new TextDecoder().decode(head.head).split("\r\n");
  if (!/^[A-Z]+ \S+ HTTP\/1\.[01]$/.test(lines[0])) {
    return await _answer(conn, 400, "Bad Request: not an HTTP/1.1 request line");
  }
  const kept = lines.filter((l, i) => i === 0 || !/^(connection|keep-alive)\s*:/i.test(l));
  const server = await Deno.connect({ transport: "unix", path: socket });
  try {
    await writeAll(
      server,
      new TextEncoder().encode(`${kept.join("\r\n")}\r\nConnection: close\r\n\r\n`),
    );
    if (head.rest.length) await writeAll(server, head.rest);
    await Promise.race([_copy(conn, server, true), _copy(server, conn, false)]);
  } finally {
    closeConn(server);
  }
}

/** Copy until `from` ends; the client's end only half-closes the server side. */
async function _copy(from: Deno.Conn, to: Deno.Conn, halfClose: boolean): Promise<void> {
  await copyConn(from, to, 64 * 1024);
  if (!halfClose) return;
  try {
    await to.closeWrite();
  } catch { /* gone */ }
  await new Promise(() => {}); // the response decides when the relay ends
}

const _PHRASE: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
};

/** A JSON-RPC error answer, as the server's own refusals look, then the connection ends. */
async function _answer(conn: Deno.Conn, status: number, message: string): Promise<void> {
  const body = new TextEncoder().encode(
    JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }),
  );
  const head = `HTTP/1.1 ${status} ${_PHRASE[status]}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n${status === 429 ? "Retry-After: 5\r\n" : ""}` +
    "Connection: close\r\n\r\n";
  try {
    await writeAll(conn, new TextEncoder().encode(head));
    await writeAll(conn, body);
  } catch { /* gone */ }
}
