/**
 * The hosted servers' runtime (./hosted_server.ts: the MCP SDK's client, its
 * schemas and validator), loaded when a server first starts: a host whose
 * config names no server, or that only lists them, never loads it (about
 * 100 ms of a cold start). By a computed specifier: Deno then does not even
 * resolve the SDK's package graph when the host loads (`deno task compile`
 * names the module, core/cli/compile.ts). In the host bundle
 * (core/cli/host_bundle.ts) it comes from the bundle, one instance with the
 * rest.
 *
 * @module
 */

let _loading: Promise<typeof import("./hosted_server.ts")> | undefined;
let _bundled: (() => Promise<typeof import("./hosted_server.ts")>) | undefined;

/** ./hosted_server.ts, loaded once on first use. */
export function hostedRuntime(): Promise<typeof import("./hosted_server.ts")> {
  return _loading ??= _bundled?.() ??
    import(new URL("./hosted_server.ts", import.meta.url).href);
}

/** How the host bundle loads ./hosted_server.ts (set by its entry: core/cli/bundle_build.ts). */
export function useBundledServer(load: () => Promise<typeof import("./hosted_server.ts")>): void {
  _bundled = load;
}
