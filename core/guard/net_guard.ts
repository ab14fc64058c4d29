/**
 * The network guard: refuses requests to addresses that are not the public
 * internet (loopback, private, link-local, cloud metadata, unspecified,
 * multicast, and the IPv4-mapped or NAT64 forms of those), unless the
 * policy lists the host explicitly.
 *
 * Where it is enforced: in a namespaced sandbox, by the egress proxy at
 * connect time (core/egress/egress.ts classifies with {@link classifyAddress}
 * and connects to the address it checked, so DNS rebinding changes
 * nothing); there {@link guardUrl} only checks the `net` list. In a
 * sandbox without the namespace (an opt-out) {@link guardUrl} resolves the
 * name itself, and `fetch` resolves it again: that window stays open.
 *
 * @module
 */

/** Why an address is not public, or `"public"`. */
export type AddressClass =
  | "public"
  | "loopback"
  | "private"
  | "link-local"
  | "unspecified"
  | "multicast"
  | "reserved"
  | "invalid";

/** A request the guard refused. Its name is `NetworkGuardError`. */
export class NetworkGuardError extends Error {
  /** The refused address class. */
  readonly addressClass: AddressClass;
  constructor(message: string, addressClass: AddressClass) {
    super(message);
    this.name = "NetworkGuardError";
    this.addressClass = addressClass;
  }
}

function _v4(ip: string): number[] | undefined {
  const parts = ip.split(".");
  if (parts.length !== 4) return undefined;
  const out = parts.map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : NaN));
  return out.every((n) => n >= 0 && n <= 255) ? out : undefined;
}

function _classifyV4([a, b]: number[]): AddressClass {
  if (a === 127) return "loopback";
  if (a === 0) return "unspecified";
  if (a === 10) return "private";
  if (a === 172 && b >= 16 && b <= 31) return "private";
  if (a === 192 && b === 168) return "private";
  if (a === 100 && b >= 64 && b <= 127) return "private"; // carrier-grade NAT
  if (a === 169 && b === 254) return "link-local"; // also 169.254.169.254, cloud metadata
  if (a >= 224 && a <= 239) return "multicast";
  // IANA special-purpose ranges: never the public internet.
  if (a === 192 && b === 0) return "reserved"; // 192.0.0.0/24 and 192.0.2.0/24 (TEST-NET-1)
  if (a === 198 && (b === 18 || b === 19)) return "reserved"; // 198.18.0.0/15 benchmarking
  if (a === 198 && b === 51) return "reserved"; // 198.51.100.0/24 (TEST-NET-2; the /16 rest is rare)
  if (a === 203 && b === 0) return "reserved"; // 203.0.113.0/24 (TEST-NET-3)
  if (a >= 240) return "reserved"; // incl. 255.255.255.255
  return "public";
}

/** The 8 groups of an IPv6 address (`undefined` when it is not one). */
function _v6Groups(ip: string): number[] | undefined {
  let s = ip.toLowerCase();
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  // A trailing dotted IPv4 part (::ffff:1.2.3.4) becomes two groups.
  const lastColon = s.lastIndexOf(":");
  const tail = s.slice(lastColon + 1);
  if (tail.includes(".")) {
    const v4 = _v4(tail);
    if (!v4) return undefined;
    s = `${s.slice(0, lastColon + 1)}${((v4[0] << 8) | v4[1]).toString(16)}:${
      ((v4[2] << 8) | v4[3]).toString(16)
    }`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const parse = (
    h: string,
  ) => (h === "" ? [] : h.split(":").map((g) => /^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN));
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  if ([...head, ...rest].some(Number.isNaN)) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const fill = 8 - head.length - rest.length;
  if (fill < 1) return undefined;
  return [...head, ...new Array(fill).fill(0), ...rest];
}

/**
 * Whether `text` is an IPv4 or IPv6 address literal (no brackets).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isIpAddress } from "./net_guard.ts";
 * assert.ok(isIpAddress("10.0.0.1") && isIpAddress("::1") && !isIpAddress("example.com"));
 * ```
 */
export function isIpAddress(text: string): boolean {
  return _v4(text) !== undefined || _v6Groups(text) !== undefined;
}

/**
 * Classify an IP address (v4 or v6, with or without brackets).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { classifyAddress } from "./net_guard.ts";
 * assert.ok(classifyAddress("127.0.0.1") === "loopback");
 * assert.ok(classifyAddress("::ffff:10.0.0.1") === "private");
 * assert.ok(classifyAddress("93.184.216.34") === "public");
 * ```
 */
export function classifyAddress(address: string): AddressClass {
  const ip = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const v4 = _v4(ip);
  if (v4) return _classifyV4(v4);
  const g = _v6Groups(ip);
  if (!g) return "invalid";
  if (g.every((x) => x === 0)) return "unspecified"; // ::
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return "loopback"; // ::1
  const embedded = [g[6] >> 8, g[6] & 255, g[7] >> 8, g[7] & 255];
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64)
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) {
    return _classifyV4(embedded);
  }
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    return _classifyV4(embedded);
  }
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return "reserved"; // 64:ff9b:1::/48
  if (g[0] === 0x2001 && g[1] === 0xdb8) return "reserved"; // 2001:db8::/32 documentation
  if (g[0] === 0x100 && g.slice(1, 4).every((x) => x === 0)) return "reserved"; // 100::/64 discard
  if ((g[0] & 0xfe00) === 0xfc00) return "private"; // fc00::/7 unique local
  if ((g[0] & 0xffc0) === 0xfe80) return "link-local"; // fe80::/10
  if ((g[0] & 0xffc0) === 0xfec0) return "private"; // fec0::/10 old site-local
  if ((g[0] & 0xff00) === 0xff00) return "multicast";
  if (g[0] === 0x2002) return _classifyV4([g[1] >> 8, g[1] & 255, g[2] >> 8, g[2] & 255]); // 6to4
  return "public";
}

/**
 * Whether `host` (a URL's `host` or `hostname`) is listed in `allowed`
 * exactly: the name itself, or `name:port`. `"*"` lists nothing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listedExplicitly } from "./net_guard.ts";
 * assert.ok(listedExplicitly(new URL("http://127.0.0.1:8080/"), ["127.0.0.1:8080"]));
 * assert.ok(!listedExplicitly(new URL("http://127.0.0.1:8080/"), ["*"]));
 * ```
 */
export function listedExplicitly(url: URL, allowed: string[]): boolean {
  const name = url.hostname.toLowerCase();
  const port = url.port ||
    (url.protocol === "https:" ? "443" : url.protocol === "http:" ? "80" : "");
  return allowed.some((entry) => {
    const e = entry.toLowerCase();
    return e === name || e === `${name}:${port}` ||
      (url.port === "" && e === url.host.toLowerCase());
  });
}

let _egress = false;

/**
 * Tell the guard that this sandbox reaches the network only through
 * corral's egress proxy (core/egress/egress.ts), which checks every address
 * at connect time: {@link guardUrl} then checks the `net` list only and
 * leaves the addresses to the proxy (the sandbox has no DNS of its own).
 * The sandbox worker calls this; tools do not need to.
 *
 * @example
 * ```ts
 * import { configureNetGuard } from "./net_guard.ts";
 * configureNetGuard({ egress: false });
 * ```
 */
export function configureNetGuard(options: { egress: boolean }): void {
  _egress = options.egress;
}

/** Options of {@link guardUrl}. */
export interface GuardOptions {
  /** The policy's hosts (the grant's `net` list); a host listed here is never refused. */
  allowed: string[];
  /** Resolve a name to addresses (default: `node:dns` lookup of every address). */
  resolve?: (hostname: string) => Promise<string[]>;
}

async function _lookupAll(hostname: string): Promise<string[]> {
  // Loaded when a name is resolved, not with the module: sandboxes import this file.
  const { lookup } = await import("node:dns/promises");
  const found = await lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => a.address);
}

/**
 * Refuse `url` when its host is not listed explicitly in `allowed` and any
 * address it resolves to is not public. Throws a {@link NetworkGuardError}
 * (whose message names the host, not its addresses) or the resolver's
 * error.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { guardUrl } from "./net_guard.ts";
 * try {
 *   await guardUrl(new URL("http://169.254.169.254/latest/meta-data"), { allowed: ["*"] });
 * } catch (err) {
 *   assert.ok((err as Error).name === "NetworkGuardError");
 * }
 * ```
 */
export async function guardUrl(url: URL, options: GuardOptions): Promise<void> {
  if (listedExplicitly(url, options.allowed)) return;
  if (_egress && !options.resolve) return; // the egress proxy checks, at connect time
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const addresses = isIpAddress(host) ? [host] : await (options.resolve ?? _lookupAll)(host);
  if (addresses.length === 0) {
    throw new NetworkGuardError(`${url.host} did not resolve to any address`, "invalid");
  }
  for (const address of addresses) {
    const kind = classifyAddress(address);
    if (kind !== "public") {
      throw new NetworkGuardError(
        `refused ${url.host}: it is a ${kind} address (only public addresses may be fetched ` +
          `unless permissions.json lists the host explicitly)`,
        kind,
      );
    }
  }
}
