/**
 * Where the way out of a namespace is, for the code inside it: the bridge's
 * address, the proxy socket's path, the proxy variables for HTTP clients,
 * and the bridge itself (run inside the namespace). No imports: the sandbox entry points load this, not the proxy
 * (core/egress/egress.ts).
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

/**
 * Inside a namespace: relay every connection to {@link EGRESS_LISTEN} to the
 * host's egress proxy on its unix `socket` (the only way out), both ways,
 * each half closed when its side ends.
 */
export function bridgeEgress(socket: string): void {
  const listener = Deno.listen(EGRESS_LISTEN);
  (async () => {
    for await (const conn of listener) {
      (async () => {
        let up: Deno.Conn | undefined;
        try {
          up = await Deno.connect({ transport: "unix", path: socket });
          await Promise.all([_relay(conn, up), _relay(up, conn)]);
        } catch { /* either side gone */ }
        for (const c of [conn, up]) {
          try {
            c?.close();
          } catch { /* closed */ }
        }
      })();
    }
  })().catch(() => {});
}

async function _relay(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  try {
    await from.readable.pipeTo(to.writable, { preventClose: true });
  } catch { /* closed */ }
  try {
    await (to as Deno.TcpConn).closeWrite();
  } catch { /* closed */ }
}
