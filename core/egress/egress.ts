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
import {
  BodyReader,
  closeConn,
  copyConn,
  type Framing,
  MAX_HEAD_BYTES,
  parseRequestHead,
  readHttpHead,
  type RequestHead,
  writeAll,
} from "../wire/mod.ts";
import { decideEgress, type EgressOptions, type EgressRecord } from "./_egress_decision.ts";
import type { SecretInjector } from "./egress_inject.ts";

export { EGRESS_LISTEN, EGRESS_SOCKET_IN_NAMESPACE, EGRESS_URL, proxyVars } from "../guard/mod.ts";
export {
  decideEgress,
  type EgressOptions,
  type EgressRecord,
  ownAddresses,
  pinnedResolver,
} from "./_egress_decision.ts";

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

  /** One client: its request head, the target, the decision, then the relay. */
  async #serve(client: Deno.Conn): Promise<void> {
    const timer = setTimeout(() => closeConn(client), _HEAD_TIMEOUT_MS);
    // An oversized head is refused like one that never ends.
    const head = await readHttpHead(client, MAX_HEAD_BYTES).finally(() => clearTimeout(timer));
    if (!head || head === "too large") {
      this.#options.onConnection?.(_record("", 0, "refused", {
        reason: "no request head (too large, or not sent within 10 s)",
      }));
      return;
    }
    // Read as llhttp reads it (../wire/http_request.ts): what it would refuse is refused here.
    if (head === "bad") return await _refuse(client, 400, "Bad request: a bare LF or CR");
    const parsed = parseRequestHead(head.whole);
    if (parsed.ok !== true) {
      return await _refuse(client, 400, `Bad request: ${parsed.ok ? "no head" : parsed.error}`);
    }
    const t = _target(parsed.head);
    if ("error" in t) return await _refuse(client, 400, t.error);
    // A tool whose CONNECT failed asks why (fetch hides a tunnel's answer): the decision
    // (or the refusal just made for that host and port) is the answer; nothing is connected.
    if (t.why) return await this.#why(client, t.host, t.port);
    const record = _record(t.host, t.port, "refused", t.via ? { via: t.via } : {});
    const decision = await decideEgress(t.host, t.port, this.#options);
    record.address = decision.address;
    if (decision.refused) {
      record.reason = decision.refused;
      this.#options.onConnection?.(record);
      if (!t.forward) this.#remember(t.host, t.port, decision.refused);
      return await _refuse(client, 403, decision.refused);
    }
    const inject = this.#options.inject;
    if (inject && !t.forward) return await this.#injected(client, head.rest, t, record, inject);
    const clear = t.forward ? _latin1(t.forward) + _latin1(head.rest) : "";
    const leak = inject?.foreign(clear, t.host, true);
    if (leak) {
      record.reason = inject!.refusal(leak, t.host, t.port, true);
      this.#options.onConnection?.(record);
      return await _refuse(client, 403, record.reason);
    }
    await this.#relay(client, head.rest, t, record);
  }

  /** Connect to the address decided on and relay both ways; audited when it ends. */
  async #relay(
    client: Deno.Conn,
    rest: Uint8Array,
    t: _Target,
    record: EgressRecord,
  ): Promise<void> {
    let server: Deno.Conn;
    try {
      // The address that was checked: no second lookup.
      server = await Deno.connect({ hostname: record.address, port: t.port });
      (server as Deno.TcpConn).setNoDelay(true);
    } catch (err) {
      record.reason = `cannot connect: ${(err as Error).message}`;
      this.#options.onConnection?.(record);
      if (!t.forward) this.#remember(t.host, t.port, record.reason);
      return await _refuse(client, 502, record.reason);
    }
    this.#open.add(server);
    record.verdict = "allowed";
    try {
      if (t.forward) {
        await writeAll(server, t.forward);
        record.bytesOut += t.forward.length;
      } else {
        await writeAll(client, _ESTABLISHED);
      }
      await Promise.all([
        this.#upstream(client, server, rest, t, record),
        _pipe(server, client, (n) => record.bytesIn += n),
      ]);
    } finally {
      this.#open.delete(server);
      closeConn(server);
      this.#options.onConnection?.(record);
    }
  }

  /**
   * Client to server, `first` first: for a forwarded request its one body
   * and nothing after it (a broken framing cuts the connection, as llhttp
   * would refuse it); with secrets to inject, cut where a placeholder would
   * pass in clear (./egress_inject.ts). Then the server's side is closed for
   * writing.
   */
  async #upstream(
    client: Deno.Conn,
    server: Deno.Conn,
    first: Uint8Array,
    t: _Target,
    record: EgressRecord,
  ): Promise<void> {
    const inject = this.#options.inject;
    const body = t.framing ? new BodyReader(t.framing) : undefined;
    const keep = Math.max(0, ...(inject?.secrets ?? []).map((s) => s.placeholder.length - 1));
    let tail = "";
    const cut = (reason: string) => {
      record.verdict = "refused";
      record.reason = reason;
      closeConn(server);
      closeConn(client);
      return false;
    };
    /** Send the part of `chunk` that may go; false once nothing more goes. */
    const send = async (chunk: Uint8Array): Promise<boolean> => {
      const step = body?.feed(chunk);
      if (step?.error) return cut(`refused: a broken request body (${step.error})`);
      const part = step ? chunk.subarray(0, step.used) : chunk;
      const text = inject ? tail + _latin1(part) : "";
      const leak = inject?.foreign(text, t.host, true);
      if (leak) return cut(inject!.refusal(leak, t.host, t.port, true));
      tail = keep ? text.slice(-keep) : "";
      if (part.length) await writeAll(server, part);
      record.bytesOut += part.length;
      return !body?.done;
    };
    try {
      const buf = new Uint8Array(32 * 1024);
      for (let going = await send(first); going;) {
        const n = await client.read(buf);
        if (n === null) break;
        going = await send(buf.subarray(0, n));
      }
    } catch { /* closed */ }
    if (record.verdict === "refused") return;
    try {
      await (server as Deno.TcpConn).closeWrite();
    } catch { /* closed */ }
  }

  /** A tunnel of a sandbox holding injected secrets (./egress_inject.ts); audited when it ends. */
  async #injected(
    client: Deno.Conn,
    rest: Uint8Array,
    t: _Target,
    record: EgressRecord,
    inject: SecretInjector,
  ): Promise<void> {
    record.verdict = "allowed";
    try {
      await writeAll(client, _ESTABLISHED);
      let first: Uint8Array | Promise<Uint8Array | null> = rest;
      if (!rest.length) {
        // Whether it speaks TLS is in its first bytes; a client that waits for the server
        // (SMTP, SSH) says nothing: after a moment the tunnel goes on in clear.
        const buf = new Uint8Array(16 * 1024);
        const read = client.read(buf).then((n) => n === null ? null : buf.subarray(0, n));
        const said = await Promise.race([read, _sleep(_QUIET_MS).then(() => undefined)]);
        if (said === null) return;
        first = said ?? read;
      }
      const o = await inject.tunnel(client, first, t.host, t.port, record.address);
      record.bytesOut = o.bytesOut;
      record.bytesIn = o.bytesIn;
      if (o.injected.length) record.injected = o.injected;
      if (o.refused) {
        record.verdict = "refused";
        record.reason = o.refused;
      }
    } catch (err) {
      record.verdict = "refused";
      record.reason ??= `cannot connect: ${(err as Error).message}`;
    } finally {
      this.#options.onConnection?.(record);
    }
  }
}

/** What a request head asks the proxy for. */
interface _Target {
  host: string;
  port: number;
  /** An absolute-form http:// request: its head as sent on to the server. */
  forward?: Uint8Array;
  /** Its body's framing: exactly one request goes on. */
  framing?: Framing;
  /** It asks why its CONNECT was refused (x-corral-why). */
  why?: boolean;
  /** A forwarder's CONNECT (x-corral-forward): which kind, for the audit. */
  via?: "forwarder" | "direct";
}

/** The target of a request head: `CONNECT host:port`, or an absolute `http://` request. */
function _target(head: RequestHead): _Target | { error: string } {
  const { method, target, version, fields } = head;
  const field = (name: string) => fields.find(([n]) => n.toLowerCase() === name)?.[1];
  if (method === "CONNECT") {
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(target);
    if (!m) return { error: `bad CONNECT target ${target}` };
    const via = field("x-corral-forward");
    return { host: m[1], port: Number(m[2]), ...(via ? { via: _via(via) } : {}) };
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return { error: "the proxy takes absolute http:// URLs or CONNECT" };
  }
  if (url.protocol !== "http:") return { error: `${url.protocol} requests go through CONNECT` };
  const host = url.hostname;
  const port = Number(url.port || 80);
  if (field("x-corral-why") !== undefined) return { host, port, why: true };
  // Origin-form to the server; one request per connection.
  const kept = fields.filter(([n]) => !/^(proxy-[a-z-]*|connection|keep-alive)$/i.test(n));
  const forward = _bytes(
    `${method} ${url.pathname}${url.search} ${version}\r\n` +
      kept.map(([n, v]) => `${n}: ${v}\r\n`).join("") + "Connection: close\r\n\r\n",
  );
  return { host, port, forward, framing: head.framing };
}

/** Latin-1 text as bytes (a field value may hold obs-text). */
function _bytes(s: string): Uint8Array {
  return Uint8Array.from(s, (c) => c.charCodeAt(0) & 0xff);
}

function _via(said: string): "forwarder" | "direct" {
  return said === "direct" ? "direct" : "forwarder";
}

function _record(
  host: string,
  port: number,
  verdict: "allowed" | "refused",
  more: Partial<EgressRecord> = {},
): EgressRecord {
  return { host, port, address: "", verdict, bytesOut: 0, bytesIn: 0, ...more };
}

function _latin1(b: Uint8Array): string {
  return new TextDecoder("latin1").decode(b);
}

/** How long a client may say nothing before its tunnel is taken to be in clear. */
const _QUIET_MS = 500;

function _sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

const _ESTABLISHED = new TextEncoder().encode("HTTP/1.1 200 Connection established\r\n\r\n");
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
