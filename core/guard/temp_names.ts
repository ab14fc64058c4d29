/**
 * The names corral gives its own temporary files in the user's tree. A
 * file is never rewritten in place: its new content is written beside it,
 * in a private folder (mode 0700) named {@link TEMP_PREFIX} and a random
 * token, then renamed over it (./replace_file.ts for corral's toolsets,
 * core/layers/tree_applier.ts for a sandbox's settled changes). No tool
 * may name a path that way: the settlement refuses it.
 *
 * @module
 */

/** The first characters of every temporary folder corral makes in a tree. */
export const TEMP_PREFIX = ".~corral-";

/**
 * Whether a path's last name (or any of its names, given a `/`-separated
 * path) is one of corral's temporary folders.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isTempName, TEMP_PREFIX } from "./temp_names.ts";
 * assert.ok(isTempName(`src/${TEMP_PREFIX}0a1b/3`));
 * assert.ok(!isTempName("src/.~corral"));
 * assert.ok(!isTempName("notes.txt"));
 * ```
 */
export function isTempName(path: string): boolean {
  return path.split("/").some((p) => p.startsWith(TEMP_PREFIX));
}

/**
 * A fresh random token for one writer's temporary folders (hex).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { tempToken } from "./temp_names.ts";
 * assert.match(tempToken(), /^[0-9a-f]{16}$/);
 * assert.notEqual(tempToken(), tempToken());
 * ```
 */
export function tempToken(): string {
  const b = crypto.getRandomValues(new Uint8Array(8));
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}
