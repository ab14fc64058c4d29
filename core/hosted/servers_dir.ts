/**
 * Where hosted servers are installed (on its own, so that the registry
 * names the folder without loading the installers).
 *
 * @module
 */
import { join, resolve } from "node:path";
import { envVar } from "../config/mod.ts";

/**
 * Where hosted servers are installed: `CORRAL_SERVERS_DIR`, else
 * `$XDG_CACHE_HOME/corral/servers`, else `~/.cache/corral/servers`; always
 * absolute (a relative value is taken from the current folder now, so the
 * install records hold paths that work from any folder later).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serversDir } from "./servers_dir.ts";
 * assert.ok(serversDir().startsWith("/"));
 * ```
 */
export function serversDir(): string {
  const explicit = envVar("CORRAL_SERVERS_DIR");
  if (explicit) return resolve(explicit);
  const xdg = envVar("XDG_CACHE_HOME");
  return resolve(xdg || join(envVar("HOME") || "/root", ".cache"), "corral", "servers");
}
