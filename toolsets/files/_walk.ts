/**
 * A breadth-first walk of a folder for the files toolset: entries sorted by
 * name, only real directories entered (a symlink is never followed), so a
 * walk that starts at a checked root stays inside it.
 *
 * @module
 */
import { join } from "node:path";
import { fsError } from "../../core/guard/mod.ts";

/**
 * Folders the files tools never walk into when they walk a tree (ListFiles
 * recursive, SearchText): a repository's own store and installed packages.
 * The folder itself is still listed; naming it as the path walks it.
 */
export const SKIPPED_DIRS: ReadonlySet<string> = new Set([".git", "node_modules"]);

/** One entry met on the walk. */
export interface WalkEntry {
  entry: Deno.DirEntry;
  /** Its real path. */
  full: string;
  /** Its path as shown to the caller (relative to what the caller gave). */
  shown: string;
}

/** Options of {@link walkFolder}. */
export interface WalkOptions {
  /** Whether to enter this directory entry. */
  descend: (entry: Deno.DirEntry) => boolean;
  /** Called for a sub-folder that cannot be read (it is skipped). */
  onUnreadable?: () => void;
  /** Stops the walk with an error when aborted. */
  signal?: AbortSignal;
}

/**
 * Walk `root` (a real, checked directory shown as `rootShown`). An
 * unreadable root throws; unreadable sub-folders are skipped. Break out of
 * the loop to stop early.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { walkFolder } from "./_walk.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/a.txt`, "x");
 * const names: string[] = [];
 * for await (const w of walkFolder(dir, ".", { descend: () => true })) names.push(w.shown);
 * assert.ok(names[0] === "a.txt");
 * ```
 */
export async function* walkFolder(
  root: string,
  rootShown: string,
  options: WalkOptions,
): AsyncGenerator<WalkEntry> {
  const queue: Array<[string, string]> = [[root, rootShown]];
  while (queue.length > 0) {
    const [dir, shown] = queue.shift()!;
    let children: Deno.DirEntry[];
    try {
      children = await Array.fromAsync(Deno.readDir(dir));
    } catch (err) {
      if (dir === root) throw fsError(err, rootShown, "folder");
      options.onUnreadable?.();
      continue;
    }
    children.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    for (const entry of children) {
      if (options.signal?.aborted) throw new Error("cancelled");
      const full = join(dir, entry.name);
      const childShown = join(shown, entry.name);
      yield { entry, full, shown: childShown };
      if (entry.isDirectory && options.descend(entry)) queue.push([full, childShown]);
    }
  }
}
