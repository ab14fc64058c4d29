/**
 * Where the way out of a namespace is, for the code inside it: the bridge's
 * address, the proxy socket's path, and the proxy variables for HTTP
 * clients. No imports: the sandbox entry points load this, not the proxy
 * (core/guard/egress.ts).
 *
 * @module
 */

/** The address the bridge listens on inside a namespace. */
export const EGRESS_LISTEN = { hostname: "127.0.0.1", port: 3128 } as const;
/** Where the proxy's socket is bound inside a namespace. */
export const EGRESS_SOCKET_IN_NAMESPACE = "/tmp/.corral-egress/egress.sock";
/** The proxy URL tools and their subprocesses use inside a namespace. */
export const EGRESS_URL = `http://${EGRESS_LISTEN.hostname}:${EGRESS_LISTEN.port}`;

/**
 * The environment that sends HTTP clients (Deno's `fetch`, curl, pip, …)
 * through the proxy at `url`: upper- and lower-case, nothing bypassed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { proxyVars } from "./egress_env.ts";
 * assert.ok(proxyVars("http://127.0.0.1:3128").https_proxy === "http://127.0.0.1:3128");
 * ```
 */
export function proxyVars(url: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]) {
    vars[name] = url;
    vars[name.toLowerCase()] = url;
  }
  vars.NO_PROXY = "";
  vars.no_proxy = "";
  return vars;
}
