/**
 * What the egress proxy (./egress.ts) decides for one connection: the
 * host must be on the grant's `net` list, and unless the list names it
 * explicitly every address it resolves to must be public
 * (../guard/net_guard.ts) and none of this machine's own. A name is resolved
 * once per decision and the connection made to the address checked; the
 * forwarders' names (./egress_forward.ts) are resolved once when the
 * sandbox starts and kept for its life ({@link pinnedResolver}).
 *
 * @module
 */
import type { SecretInjector } from "./egress_inject.ts";
import { classifyAddress, isIpAddress } from "../guard/mod.ts";

/** One connection the proxy decided on. */
export interface EgressRecord {
  /** The host as asked (a name or an address). */
  host: string;
  port: number;
  /** The address connected to (or the first refused one); "" when none. */
  address: string;
  verdict: "allowed" | "refused";
  /** Why it was refused. */
  reason?: string;
  /** Bytes from the tool to the server, and back. */
  bytesOut: number;
  bytesIn: number;
  /** The names of the secrets put in on the way (./egress_inject.ts), never their values. */
  injected?: string[];
  /**
   * How a `host:port` grant's connection came, as the sandbox's side says:
   * through the bridge's forwarder (./forward_bridge.ts), or an npm server's
   * own `node:net` connection (./forward_direct.ts). Absent: an HTTP client.
   */
  via?: "forwarder" | "direct";
}

/** What an egress proxy (./egress.ts) enforces. */
export interface EgressOptions {
  /** The grant's `net` list (`host`, `host:port`, or `*`). */
  allowed: string[];
  /**
   * Where that list is set, when it is a hosted server's own
   * (`servers.<name>`): a refusal names the operator's change.
   */
  listedIn?: string;
  /** The permissions.json that list is in (default: named as `permissions.json`). */
  listedFile?: string;
  /** Resolve a name to its addresses (default: `node:dns` lookup, every address). */
  resolve?: (hostname: string) => Promise<string[]>;

  /**
   * The secrets this sandbox's proxy injects (./egress_inject.ts): its
   * tunnels are terminated and watched.
   */
  inject?: SecretInjector;
  /** Called once per connection when it ends (or is refused). */
  onConnection?: (record: EgressRecord) => void;
  /** This machine's own addresses (default: its interfaces'): refused unless listed. */
  ownAddresses?: Set<string>;
}

let _own: Set<string> | undefined;

/** The addresses of this machine's interfaces (needs sys; empty when it cannot tell). */
export function ownAddresses(): Set<string> {
  if (_own) return _own;
  _own = new Set();
  try {
    for (const i of Deno.networkInterfaces()) _own.add(i.address.toLowerCase());
  } catch { /* no sys permission */ }
  return _own;
}

/**
 * Decide on `host:port` for a grant: the address to connect to, or why not.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decideEgress } from "./_egress_decision.ts";
 * const d = await decideEgress("127.0.0.1", 80, { allowed: ["*"] });
 * assert.ok(d.refused?.includes("loopback"));
 * const ok = await decideEgress("127.0.0.1", 80, { allowed: ["127.0.0.1:80"] });
 * assert.ok(ok.address === "127.0.0.1");
 * ```
 */
export async function decideEgress(
  host: string,
  port: number,
  options: EgressOptions,
): Promise<{ address: string; refused?: string }> {
  const name = host.replace(/^\[|\]$/g, "").toLowerCase();
  const listed = options.allowed.some((e) => {
    const entry = e.toLowerCase();
    return entry === name || entry === `${name}:${port}` ||
      entry === `[${name}]:${port}` || entry === `[${name}]`;
  });
  if (!listed && !options.allowed.includes("*")) {
    return {
      address: "",
      refused: options.listedIn
        ? `${host}:${port} is not on the net list of ${options.listedIn}: to allow it, add the ` +
          `host to ${options.listedIn}.net in ${options.listedFile ?? "permissions.json"}`
        : `${host}:${port} is not on this tool's net list`,
    };
  }
  let addresses: string[];
  try {
    addresses = isIpAddress(name) ? [name] : await (options.resolve ?? _lookupAll)(name);
  } catch (err) {
    return { address: "", refused: `${host} did not resolve: ${(err as Error).message}` };
  }
  if (addresses.length === 0) return { address: "", refused: `${host} did not resolve` };
  if (listed) return { address: addresses[0] };
  const own = options.ownAddresses ?? ownAddresses();
  for (const address of addresses) {
    const kind = classifyAddress(address);
    if (kind !== "public") {
      return {
        address,
        refused: `refused ${host}:${port}: it is a ${kind} address (only public addresses ` +
          `may be reached unless permissions.json lists the host explicitly)`,
      };
    }
    if (own.has(address.toLowerCase())) {
      return {
        address,
        refused: `refused ${host}:${port}: it is an address of this machine (only other ` +
          `machines may be reached unless permissions.json lists the host explicitly)`,
      };
    }
  }
  return { address: addresses[0] };
}

async function _lookupAll(hostname: string): Promise<string[]> {
  // Loaded on the first lookup: node:dns costs every host start tens of milliseconds.
  const { lookup } = await import("node:dns/promises");
  const found = await lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => a.address);
}

/**
 * A resolver that answers `names` from one lookup each, started now (when
 * the grant is made) and kept for the sandbox's life: a DNS answer that
 * changes later changes nothing. A lookup that failed is tried again on the
 * next connection. Other names go to `base` every time.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pinnedResolver } from "./_egress_decision.ts";
 * let n = 0;
 * const resolve = pinnedResolver(["db"], () => Promise.resolve([`10.0.0.${++n}`]));
 * assert.deepEqual(await resolve("db"), ["10.0.0.1"]);
 * assert.deepEqual(await resolve("db"), ["10.0.0.1"]); // pinned
 * assert.deepEqual(await resolve("other"), ["10.0.0.2"]);
 * ```
 */
export function pinnedResolver(
  names: readonly string[],
  base: (hostname: string) => Promise<string[]> = _lookupAll,
): (hostname: string) => Promise<string[]> {
  const pins = new Map<string, Promise<string[]>>();
  const pin = (name: string) => {
    const p = base(name);
    pins.set(name, p);
    p.catch(() => pins.get(name) === p && pins.delete(name));
    return p;
  };
  for (const n of names) if (!isIpAddress(n)) pin(n.toLowerCase());
  return (hostname) => {
    const name = hostname.toLowerCase();
    if (!names.some((n) => n.toLowerCase() === name)) return base(hostname);
    return pins.get(name) ?? pin(name);
  };
}
