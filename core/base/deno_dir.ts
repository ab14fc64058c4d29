/**
 * The Deno cache this process uses, as Deno finds it: `DENO_DIR`, else
 * `$XDG_CACHE_HOME/deno`, else `~/.cache/deno`; its real path when it
 * exists. The jail keeps it out of a namespace (core/jail/), the host
 * bundle looks there for the packages its sandboxes load
 * (core/cli/host_bundle.ts).
 *
 * @module
 */

/**
 * The Deno cache folder of this process.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { denoDir } from "./deno_dir.ts";
 * assert.ok(denoDir().startsWith("/"));
 * ```
 */
export function denoDir(): string {
  const env = (n: string) => {
    try {
      return Deno.env.get(n) || undefined;
    } catch {
      return undefined;
    }
  };
  const xdg = env("XDG_CACHE_HOME");
  const dir = (env("DENO_DIR") ?? (xdg ? `${xdg}/deno` : undefined) ??
    `${env("HOME") ?? "/root"}/.cache/deno`).replace(/\/+/g, "/");
  try {
    return Deno.realPathSync(dir);
  } catch {
    return dir;
  }
}
