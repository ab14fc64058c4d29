/**
 * Whether a path names something now (following symlinks), synchronously.
 *
 * @module
 */

/**
 * True when `stat` of `path` succeeds (a symlink counts as what it points
 * to; a dangling one does not exist).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pathExists } from "./path_exists.ts";
 * assert.equal(pathExists("/"), true);
 * assert.equal(pathExists("/no/such/path/here"), false);
 * ```
 */
export function pathExists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
