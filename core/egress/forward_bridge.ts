/**
 * Inside a namespace: the forwarders of ./egress_forward.ts and the
 * namespace's own name server. Each forwarder listens at its address and
 * port and sends every connection to the host's egress proxy on its unix
 * socket as `CONNECT host:port`; once the proxy says 200 the bytes flow both
 * ways as they are, whatever the protocol (PostgreSQL, Redis, SMTP, SSH,
 * TLS). A refusal (403, 502) closes the connection: the proxy audited why.
 * The name server (UDP `127.0.0.1:53`) answers the forwarders' names with
 * their addresses and every other name with NXDOMAIN: no name is looked up
 * outside.
 *
 * Imports only ./egress_forward.ts (which imports nothing): both run
 * inside the sandbox.
 *
 * @module
 */
import { type Forward, hostPort } from "./egress_forward.ts";

const _MAX_REPLY_HEAD = 16 * 1024;

/** Listen for every forwarder of `forwards`, relaying through the proxy at `socket`. */
export function bridgeForwards(socket: string, forwards: readonly Forward[]): void {
  for (const f of forwards) {
    const listener = Deno.listen({ hostname: f.listen, port: f.port });
    (async () => {
      for await (const conn of listener) {
        // Small messages (a query, its answer) go at once: no Nagle delay on the way.
        (conn as Deno.TcpConn).setNoDelay(true);
        void _forward(conn, socket, hostPort(f.host, f.port));
      }
    })().catch(() => {});
  }
}

async function _forward(conn: Deno.Conn, socket: string, target: string): Promise<void> {
  let up: Deno.Conn | undefined;
  try {
    up = await Deno.connect({ transport: "unix", path: socket });
    const ask =
      `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nX-Corral-Forward: forwarder\r\n\r\n`;
    await _writeAll(up, new TextEncoder().encode(ask));
    const rest = await _readReply(up);
    if (rest === undefined) return;
    if (rest.length) await _writeAll(conn, rest);
    await Promise.all([_relay(conn, up), _relay(up, conn)]);
  } catch {
    /* either side gone */
  } finally {
    for (const c of [conn, up]) {
      try {
        c?.close();
      } catch { /* closed */ }
    }
  }
}

/** The proxy's answer: undefined unless 200; else what came after its head. */
async function _readReply(up: Deno.Conn): Promise<Uint8Array | undefined> {
  const buf = new Uint8Array(_MAX_REPLY_HEAD);
  let n = 0;
  for (;;) {
    const got = await up.read(buf.subarray(n));
    if (got === null) return undefined;
    n += got;
    const text = new TextDecoder().decode(buf.subarray(0, n));
    const end = text.indexOf("\r\n\r\n");
    if (end >= 0) {
      if (!/^HTTP\/1\.[01] 200 /.test(text)) return undefined;
      return buf.slice(new TextEncoder().encode(text.slice(0, end + 4)).length, n);
    }
    if (n === buf.length) return undefined;
  }
}

/** `from` to `to` by plain reads into one buffer (cheaper than streams, for small messages). */
async function _relay(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) break;
      await _writeAll(to, buf.subarray(0, n));
    }
  } catch { /* closed */ }
  try {
    await (to as Deno.TcpConn).closeWrite();
  } catch { /* closed */ }
}

async function _writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  for (let off = 0; off < data.length;) off += await conn.write(data.subarray(off));
}

/**
 * The namespace's name server on UDP `127.0.0.1:53` (node:dgram): A and
 * AAAA questions for a forwarder's name get its address, everything else
 * NXDOMAIN. Its failure to start (no port 53 to bind) leaves names to
 * `/etc/hosts` alone.
 */
export async function serveNames(forwards: readonly Forward[]): Promise<void> {
  const names = new Map<string, string>();
  for (const f of forwards) if (f.host !== f.listen) names.set(f.host, f.listen);
  const dgram = (await import("node:dgram")).default;
  const server = dgram.createSocket("udp4");
  server.on("message", (msg: Uint8Array, from: { port: number; address: string }) => {
    const reply = dnsAnswer(msg, names);
    if (reply) server.send(reply, from.port, from.address);
  });
  server.on("error", () => server.close());
  server.bind(53, "127.0.0.1");
}

/**
 * The DNS answer to the question in `msg` from `names` (name → address):
 * the address for an A (IPv4) or AAAA (IPv6) question of a known name, no
 * answer for the other type, NXDOMAIN for an unknown name; undefined for a
 * message that is no question.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { dnsAnswer } from "./forward_bridge.ts";
 * const q = new Uint8Array([0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 100, 98, 0, 0, 1, 0, 1]);
 * const a = dnsAnswer(q, new Map([["db", "127.0.0.2"]]))!;
 * assert.deepEqual([...a.subarray(-4)], [127, 0, 0, 2]);
 * assert.equal(dnsAnswer(q, new Map())![3] & 0xf, 3); // NXDOMAIN
 * ```
 */
export function dnsAnswer(msg: Uint8Array, names: Map<string, string>): Uint8Array | undefined {
  if (msg.length < 17 || (msg[2] & 0x80) !== 0) return undefined;
  const labels: string[] = [];
  let i = 12;
  while (i < msg.length && msg[i] !== 0) {
    if (msg[i] > 63) return undefined;
    labels.push(new TextDecoder().decode(msg.subarray(i + 1, i + 1 + msg[i])));
    i += msg[i] + 1;
  }
  if (i + 4 >= msg.length) return undefined;
  const qtype = (msg[i + 1] << 8) | msg[i + 2];
  const address = names.get(labels.join(".").toLowerCase());
  const v6 = address?.includes(":") ?? false;
  const fits = address !== undefined && ((qtype === 1 && !v6) || (qtype === 28 && v6));
  const bytes = !fits ? [] : v6 ? _v6(address!) : address!.split(".").map(Number);
  const answer = fits ? [0xc0, 0x0c, 0, qtype, 0, 1, 0, 0, 0, 60, 0, bytes.length, ...bytes] : [];
  const rcode = address === undefined ? 3 : 0;
  const header = [msg[0], msg[1], 0x81, 0x80 | rcode, 0, 1, 0, fits ? 1 : 0, 0, 0, 0, 0];
  return new Uint8Array([...header, ...msg.subarray(12, i + 5), ...answer]);
}

function _v6(address: string): number[] {
  const [head, tail] = address.split("::");
  const h = head ? head.split(":") : [];
  const t = tail !== undefined && tail !== "" ? tail.split(":") : [];
  const groups = [...h, ...Array(8 - h.length - t.length).fill("0"), ...t];
  return groups.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
}
