/**
 * Whether one absolute path is another or lies inside it, by name.
 *
 * @module
 */

/**
 * Whether `path` is `root` or inside it (both absolute and normalised).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isWithin } from "./is_within.ts";
 * assert.ok(isWithin("/ws/a", "/ws") && isWithin("/ws", "/ws") && isWithin("/x", "/"));
 * assert.ok(!isWithin("/wsx", "/ws"));
 * ```
 */
export function isWithin(path: string, root: string): boolean {
  if (root === "/") return true;
  return path === root || path.startsWith(root.endsWith("/") ? root : root + "/");
}
