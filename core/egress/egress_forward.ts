/**
 * Forwarders: any TCP protocol to a granted `host:port`, and nothing else.
 * Each `host:port` of a sandbox's net list is reachable inside its
 * namespace at its own name and port: a name gets an address of its own on
 * the namespace's loopback (`127.0.0.2`, `127.0.0.3`, …, written in its
 * `/etc/hosts`, ../jail/namespace_etc.ts), an address stands for itself (put on
 * the namespace's loopback by the launcher, ../jail/launcher.ts). The bridge
 * inside (./forward_bridge.ts) listens there and sends each connection as
 * `CONNECT host:port` to the sandbox's egress proxy (./egress.ts), which
 * decides, connects and audits it as any other: the name resolved once
 * when the sandbox starts, special ranges refused unless the list names
 * that exact address.
 *
 * No imports: the bridge inside the namespace loads this.
 *
 * @module
 */

/** One forwarder: where it listens inside the namespace, and the grant it stands for. */
export interface Forward {
  /** The host as granted (a name, an IPv4 address, or an IPv6 address without brackets). */
  host: string;
  port: number;
  /** The address it listens on inside the namespace. */
  listen: string;
}

/** The variable that carries {@link DirectForwards} to ./forward_direct.ts in a server. */
export const DIRECT_FORWARDS_VAR = "CORRAL_DIRECT_FORWARDS";

/** What an npm server's preloaded ./forward_direct.ts needs: the proxy's socket, its forwarders. */
export interface DirectForwards {
  /** The egress proxy's unix socket, inside the namespace. */
  socket: string;
  forwards: Forward[];
}

/** The first loopback address given to a name (127.0.0.1 is the namespace's own). */
const _FIRST_ALIAS = 2;

/**
 * The forwarders of a net list: one per `host:port` entry (`"*"` and a host
 * without a port get none: only HTTP clients reach those, through the
 * proxy). A name listens on an address of its own, the same for all its
 * ports; an address listens on itself.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { forwardsOf } from "./egress_forward.ts";
 * assert.deepEqual(forwardsOf(["db.internal:5432", "*", "example.com", "127.0.0.1:6379", "[::1]:7000"]), [
 *   { host: "db.internal", port: 5432, listen: "127.0.0.2" },
 *   { host: "127.0.0.1", port: 6379, listen: "127.0.0.1" },
 *   { host: "::1", port: 7000, listen: "::1" },
 * ]);
 * ```
 */
export function forwardsOf(net: readonly string[]): Forward[] {
  const out: Forward[] = [];
  const aliases = new Map<string, string>();
  const seen = new Set<string>();
  for (const entry of net) {
    const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\[\]\s]+)):(\d{1,5})$/.exec(entry.trim());
    if (!m) continue;
    const port = Number(m[3]);
    if (port < 1 || port > 65535) continue;
    const host = (m[1] ?? m[2]).toLowerCase();
    if (seen.has(`${host} ${port}`)) continue;
    seen.add(`${host} ${port}`);
    let listen = host === "localhost" ? "127.0.0.1" : host;
    if (!m[1] && !_isIPv4(host) && host !== "localhost") {
      listen = aliases.get(host) ?? `127.0.0.${_FIRST_ALIAS + aliases.size}`;
      if (aliases.size >= 250 && !aliases.has(host)) continue;
      aliases.set(host, listen);
    }
    out.push({ host, port, listen });
  }
  return out;
}

/**
 * The forwarders placed where their names really lead: a name listens on
 * the address it was resolved to when the sandbox started (`pinned`), so
 * that inside the namespace it means what it means outside (a client that
 * checks where a name leads sees the real address); a name not resolved,
 * or whose address and port another forwarder holds, keeps its loopback
 * alias.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { forwardsOf, placeForwards } from "./egress_forward.ts";
 * const f = forwardsOf(["api.example:443", "db:5432", "93.184.216.34:443"]);
 * const placed = placeForwards(f, new Map([["api.example", "93.184.216.34"]]));
 * assert.deepEqual(placed.map((x) => x.listen), ["127.0.0.2", "127.0.0.3", "93.184.216.34"]);
 * ```
 */
export function placeForwards(
  forwards: readonly Forward[],
  pinned: ReadonlyMap<string, string>,
): Forward[] {
  const key = (address: string, port: number) => `${address} ${port}`;
  const taken = new Set(
    forwards.filter((f) => f.host === f.listen).map((f) => key(f.listen, f.port)),
  );
  // A name moves with all its ports, or not at all (it has one address in /etc/hosts).
  const moves = new Map<string, string>();
  for (const [name, address] of pinned) {
    const ports = forwards.filter((f) => f.host === name && f.host !== f.listen);
    if (!ports.length || ports.some((f) => taken.has(key(address, f.port)))) continue;
    for (const f of ports) taken.add(key(address, f.port));
    moves.set(name, address);
  }
  return forwards.map((f) =>
    f.host !== f.listen && moves.has(f.host) ? { ...f, listen: moves.get(f.host)! } : f
  );
}

/**
 * The addresses a launcher must put on the namespace's loopback: those the
 * forwarders listen on that are not loopback addresses already
 * (`127.0.0.0/8` and `::1` are there as soon as loopback is up).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { extraAddresses, forwardsOf } from "./egress_forward.ts";
 * const f = forwardsOf(["db:5432", "10.1.2.3:5432", "[fd00::5]:6379", "[::1]:1"]);
 * assert.deepEqual(extraAddresses(f), ["10.1.2.3/32", "fd00::5/128"]);
 * ```
 */
export function extraAddresses(forwards: readonly Forward[]): string[] {
  const out = new Set<string>();
  for (const f of forwards) {
    if (f.listen.startsWith("127.") || f.listen === "::1") continue;
    out.add(f.listen.includes(":") ? `${f.listen}/128` : `${f.listen}/32`);
  }
  return [...out];
}

/** `listen:port` as Deno's `--allow-net` and a CONNECT line write it. */
export function hostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The names of `/etc/hosts` for the forwarders: each name and its address. */
export function forwardNames(
  forwards: readonly Forward[],
): Array<{ name: string; address: string }> {
  const out = new Map<string, string>();
  for (const f of forwards) if (f.host !== f.listen) out.set(f.host, f.listen);
  return [...out].map(([name, address]) => ({ name, address }));
}

function _isIPv4(h: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(h);
}
