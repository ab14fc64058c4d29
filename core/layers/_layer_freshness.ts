/**
 * When a sandbox's view of the tree is due for a refresh (./view_refresh.ts):
 * the tree's generation, and the view's age.
 *
 * The kernel leaves an overlay undefined when its lower folder changes
 * while mounted; measured here, a path the sandbox looked up before it
 * existed stays missing, and a path replaced or removed in the tree stays as
 * it was, until the overlay's cached entries are dropped. Whether that may
 * have happened is read from outside this process's memory:
 *
 * - every apply to a write root, by any corral process of this user, bumps
 *   the root's **generation**: a small file beside the root's lock file (in
 *   the layers' `locks` folder, never in the tree), written under that lock
 *   (./_tree_lock.ts). A view made at another generation is due, so a file
 *   another session or another corral process made or removed shows at the
 *   sandbox's next call;
 * - a view older than {@link VIEW_MAX_AGE_MS} is due too: what other
 *   programs (an editor, git) changed in the tree shows at the first call
 *   that comes that long after the last refresh. No watch on the tree is
 *   needed (a workspace may hold more folders than inotify watches).
 *
 * @module
 */
import { join } from "node:path";
import { sha256Hex } from "../base/mod.ts";

/** A view older than this (ms) is refreshed before a call, whatever the generation. */
export const VIEW_MAX_AGE_MS = 2_000;

/** The file holding `root`'s generation, in the layers' `locks` folder. */
export function generationFile(locks: string, root: string): string {
  return join(locks, `${sha256Hex(root).slice(0, 32)}.gen`);
}

/**
 * `root`'s generation now (`""` when no apply ever bumped it, or it cannot
 * be read: then a view made at another reading is due, which is safe).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { bumpGeneration, readGeneration } from "./_layer_freshness.ts";
 * const locks = await Deno.makeTempDir();
 * assert.equal(readGeneration(locks, "/ws"), "");
 * const { before, after } = await bumpGeneration(locks, "/ws");
 * assert.equal(before, "");
 * assert.equal(readGeneration(locks, "/ws"), after);
 * assert.notEqual(after, (await bumpGeneration(locks, "/ws")).after);
 * ```
 */
export function readGeneration(locks: string, root: string): string {
  try {
    return Deno.readTextFileSync(generationFile(locks, root)).trim();
  } catch {
    return "";
  }
}

/**
 * Bump `root`'s generation (call holding the root's lock): returns the
 * generation before and after. Written whole by a rename, so a reader never
 * sees half of it. Where it cannot be written (a read-only layers folder),
 * other views see the change when they are old ({@link VIEW_MAX_AGE_MS}).
 */
export async function bumpGeneration(
  locks: string,
  root: string,
): Promise<{ before: string; after: string }> {
  const before = readGeneration(locks, root);
  const n = Number.parseInt(before.split("-")[0], 10);
  // A counter, and this process's mark: two processes never write the same value.
  const after = `${Number.isSafeInteger(n) ? n + 1 : 1}-${Deno.pid}`;
  const file = generationFile(locks, root);
  const tmp = `${file}.${Deno.pid}.tmp`;
  try {
    await Deno.mkdir(locks, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(tmp, after + "\n", { mode: 0o600 });
    await Deno.rename(tmp, file);
  } catch {
    await Deno.remove(tmp).catch(() => {});
  }
  return { before, after };
}
