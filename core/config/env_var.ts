/**
 * Reading the host's environment where a value is optional: a variable
 * that is unset, or that the host may not read, is simply absent.
 *
 * @module
 */

/** A variable of the host's environment, or undefined (also without env access). */
export function envVar(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/**
 * `~` and `~/x` → the home directory (other paths, and every path when HOME
 * is unknown, unchanged).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { expandHome } from "./env_var.ts";
 * const home = Deno.env.get("HOME");
 * if (home) assert.equal(expandHome("~/tools"), `${home}/tools`);
 * assert.equal(expandHome("a/~"), "a/~");
 * ```
 */
export function expandHome(path: string): string {
  if (path !== "~" && !path.startsWith("~/")) return path;
  const home = envVar("HOME");
  return home ? home + path.slice(1) : path;
}
