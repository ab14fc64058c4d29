/**
 * The egress proxy: the one way out of a sandbox namespace. A sandbox that
 * holds `n` has no network of its own (a new network namespace with only
 * loopback); its Deno code and its subprocesses reach the network through
 * an HTTP proxy on a unix socket that the host serves, bridged to
 * `127.0.0.1:3128` inside the namespace (core/sandbox/sandbox_child.ts).
 *
 * The proxy decides at connect time: the host must be on the grant's `net`
 * list, and unless the list names it explicitly every address it resolves
 * to must be public (core/guard/net_guard.ts). It resolves a name once and
 * connects to the address it checked, so a DNS answer that changes between
 * two lookups (rebinding) changes nothing. `CONNECT host:port` tunnels (TLS
 * stays end to end, between the tool and the server) and absolute-form
 * `http://` requests are both served; every connection, allowed or
 * refused, is reported (`onConnection`) for the audit log.
 *
 * @module
 */
import { join } from "node:path";
import { closeConn, copyConn, writeAll } from "./conn_io.ts";
import { readHttpHead } from "./http_head.ts";
import { decideEgress, type EgressOptions, type EgressRecord } from "./egress_decision.ts";

export { EGRESS_LISTEN, EGRESS_SOCKET_IN_NAMESPACE, EGRESS_URL, proxyVars } from "./egress_env.ts";
export {
  decideEgress,
  type EgressOptions,
  type EgressRecord,
  ownAddresses,
  pinnedResolver,
} from "./egress_decision.ts";

const _MAX_HEAD = 64 * 1024;
/** How long a client may take to send its request head. */
const _HEAD_TIMEOUT_MS = 10_000;
/** Connections one sandbox's proxy serves at once. */
export const MAX_CONNECTIONS_PER_PROXY = 64;
/** Connections all proxies of this host serve at once. */
export const MAX_CONNECTIONS_TOTAL = 512;
let _openTotal = 0;

/**
 * An egress proxy listening on a unix socket. One per sandbox: it holds
 * that sandbox's grant.
 *
 * @example
 * ```ts ignore
 * const proxy = new EgressProxy({ allowed: ["example.com"] });
 * proxy.listen("/tmp/corral-egress-x/egress.sock");
 * // ... the sandbox runs ...
 * proxy.close();
 * ```
 */
export class EgressProxy {
  readonly #options: EgressOptions;
  #listener: Deno.Listener | undefined;
  #open = new Set<Deno.Conn>();

  constructor(options: EgressOptions) {
    this.#options = options;
  }

  /** Start serving on `path` (a unix socket). */
  listen(path: string): void {
    this.#listener = Deno.listen({ transport: "unix", path });
    (async () => {
      for await (const conn of this.#listener!) {
        // Bounded: a sandbox that opens connections without end costs the host nothing more.
        if (this.#clients >= MAX_CONNECTIONS_PER_PROXY || _openTotal >= MAX_CONNECTIONS_TOTAL) {
          this.#refusedEarly++;
          if (this.#refusedEarly === 1 || this.#refusedEarly % 100 === 0) {
            this.#options.onConnection?.({
              host: "",
              port: 0,
              address: "",
              verdict: "refused",
              reason: `too many connections at once (${MAX_CONNECTIONS_PER_PROXY} per sandbox, ` +
                `${MAX_CONNECTIONS_TOTAL} in all); ${this.#refusedEarly} refused so far`,
              bytesOut: 0,
              bytesIn: 0,
            });
          }
          closeConn(conn);
          continue;
        }
        this.#clients++;
        _openTotal++;
        this.#open.add(conn);
        this.#serve(conn).catch(() => {}).finally(() => {
          this.#clients--;
          _openTotal--;
          this.#open.delete(conn);
          closeConn(conn);
        });
      }
    })().catch(() => {});
  }

  #clients = 0;
  #refusedEarly = 0;

  /** Stop serving and cut every open connection. */
  close(): void {
    try {
      this.#listener?.close();
    } catch { /* closed */ }
    for (const c of this.#open) closeConn(c);
    this.#open.clear();
  }

  /** The last refusals of CONNECT targets (`host:port` → reason), for {@link #why}. */
  #refusals = new Map<string, string>();

  #remember(host: string, port: number, reason: string): void {
    this.#refusals.delete(`${host}:${port}`);
    this.#refusals.set(`${host}:${port}`, reason);
    if (this.#refusals.size > 64) this.#refusals.delete(this.#refusals.keys().next().value!);
  }

  async #why(client: Deno.Conn, host: string, port: number): Promise<void> {
    const reason = this.#refusals.get(`${host}:${port}`) ??
      (await decideEgress(host, port, this.#options)).refused;
    if (reason) return await _refuse(client, 403, reason);
    try {
      await writeAll(client, new TextEncoder().encode(_NOT_REFUSED));
    } catch { /* gone */ }
  }

  async #serve(client: Deno.Conn): Promise<void> {
    const timer = setTimeout(() => closeConn(client), _HEAD_TIMEOUT_MS);
    // An oversized head is refused like one that never ends.
    const read = await readHttpHead(client, _MAX_HEAD).finally(() => clearTimeout(timer));
    const head = read === "too large" ? undefined : read;
    if (!head) {
      this.#options.onConnection?.({
        host: "",
        port: 0,
        address: "",
        verdict: "refused",
        reason: "no request head (too large, or not sent within 10 s)",
        bytesOut: 0,
        bytesIn: 0,
      });
      return;
    }
    const text = new TextDecoder().decode(head.head);
    const [requestLine, ...headerLines] = text.split("\r\n");
    const [method, target, version] = requestLine.split(" ");
    let host: string;
    let port: number;
    let forward: Uint8Array | undefined;
    if (method === "CONNECT") {
      const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(target ?? "");
      if (!m) return await _refuse(client, 400, `bad CONNECT target ${target}`);
      host = m[1];
      port = Number(m[2]);
    } else {
      let url: URL;
      try {
        url = new URL(target);
      } catch {
        return await _refuse(client, 400, "the proxy takes absolute http:// URLs or CONNECT");
      }
      if (url.protocol !== "http:") {
        return await _refuse(client, 400, `${url.protocol} requests go through CONNECT`);
      }
      host = url.hostname;
      port = Number(url.port || 80);
      // A tool whose CONNECT failed asks why (fetch hides a tunnel's answer): the decision
      // (or the refusal just made for that host and port) is the answer; nothing is connected.
      if (headerLines.some((l) => /^x-corral-why\s*:/i.test(l))) {
        return await this.#why(client, host, port);
      }
      // Origin-form to the server; one request per connection.
      const headers = headerLines.filter((l) =>
        l && !/^(proxy-[a-z-]*|connection|keep-alive)\s*:/i.test(l)
      );
      forward = new TextEncoder().encode(
        `${method} ${url.pathname}${url.search} ${version}\r\n${
          headers.join("\r\n")
        }\r\nConnection: close\r\n\r\n`,
      );
    }
    const record: EgressRecord = {
      host,
      port,
      address: "",
      verdict: "refused",
      bytesOut: 0,
      bytesIn: 0,
    };
    const decision = await decideEgress(host, port, this.#options);
    record.address = decision.address;
    if (decision.refused) {
      record.reason = decision.refused;
      this.#options.onConnection?.(record);
      if (!forward) this.#remember(host, port, decision.refused);
      return await _refuse(client, 403, decision.refused);
    }
    let server: Deno.Conn;
    try {
      // The address that was checked: no second lookup.
      server = await Deno.connect({ hostname: decision.address, port });
    } catch (err) {
      record.reason = `cannot connect: ${(err as Error).message}`;
      this.#options.onConnection?.(record);
      if (!forward) this.#remember(host, port, record.reason);
      return await _refuse(client, 502, record.reason);
    }
    this.#open.add(server);
    record.verdict = "allowed";
    try {
      if (forward) {
        await writeAll(server, forward);
        record.bytesOut += forward.length;
      } else {
        await writeAll(
          client,
          new TextEncoder().encode("HTTP/1.1 200 Connection established\r\n\r\n"),
        );
      }
      if (head.rest.length) {
        await writeAll(server, head.rest);
        record.bytesOut += head.rest.length;
      }
      await Promise.all([
        _pipe(client, server, (n) => record.bytesOut += n),
        _pipe(server, client, (n) => record.bytesIn += n),
      ]);
    } finally {
      this.#open.delete(server);
      closeConn(server);
      this.#options.onConnection?.(record);
    }
  }
}

const _NOT_REFUSED = "HTTP/1.1 204 No Content\r\nX-Corral-Allowed: 1\r\nConnection: close\r\n\r\n";

async function _refuse(conn: Deno.Conn, status: number, reason: string): Promise<void> {
  const body = new TextEncoder().encode(reason + "\n");
  const phrase = status === 403 ? "Forbidden" : status === 502 ? "Bad Gateway" : "Bad Request";
  const head = `HTTP/1.1 ${status} ${phrase}\r\nContent-Type: text/plain\r\n` +
    `X-Corral-Refused: ${encodeURIComponent(reason)}\r\nContent-Length: ${body.length}\r\n` +
    `Connection: close\r\n\r\n`;
  try {
    await writeAll(conn, new TextEncoder().encode(head));
    await writeAll(conn, body);
  } catch { /* gone */ }
}

async function _pipe(from: Deno.Conn, to: Deno.Conn, count: (n: number) => void): Promise<void> {
  await copyConn(from, to, 32 * 1024, count);
  try {
    await (to as Deno.TcpConn).closeWrite();
  } catch { /* closed */ }
}

/** A started {@link EgressProxy}: the private folder of its socket, and how to stop it. */
export interface StartedEgress {
  /** The folder holding `egress.sock` (bound into the sandbox's namespace). */
  dir: string;
  /** Stop the proxy and remove its folder (once; later calls do nothing). */
  close(): void;
}

/**
 * Start one sandbox's proxy on `egress.sock` in a new private folder under
 * `base`: corral's own run folder, hidden in every namespace, never a /tmp
 * a grant could cover.
 */
export function startEgress(base: string, options: EgressOptions): StartedEgress {
  Deno.mkdirSync(base, { recursive: true, mode: 0o700 });
  const dir = Deno.makeTempDirSync({ dir: base, prefix: "egress-" });
  const proxy = new EgressProxy(options);
  proxy.listen(join(dir, "egress.sock"));
  let closed = false;
  return {
    dir,
    close: () => {
      if (closed) return;
      closed = true;
      proxy.close();
      Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
