/**
 * What a path of the user's tree is now (its signature: kind, inode, size,
 * modification time), to tell whether someone else changed it since a
 * sandbox's view of it; and keeping a sandbox's version of a conflicting
 * path in corral's own folder, never in the tree.
 *
 * @module
 */
import { dirname, join } from "node:path";

/** What a path of the tree is: kind, inode, size, modification time. */
export interface Sig {
  kind: "file" | "dir" | "symlink" | "other";
  ino: number;
  size: number;
  mtimeMs: number;
}

/**
 * The signature of `abs`, or null when nothing is there.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lowerSig } from "./_tree_sig.ts";
 * const d = await Deno.makeTempDir();
 * assert.equal(await lowerSig(`${d}/none`), null);
 * assert.equal((await lowerSig(d))?.kind, "dir");
 * ```
 */
export async function lowerSig(abs: string): Promise<Sig | null> {
  try {
    return sigOf(await Deno.lstat(abs));
  } catch {
    return null;
  }
}

/**
 * The signature of what `lstat` read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sigOf } from "./_tree_sig.ts";
 * const d = await Deno.makeTempDir();
 * assert.equal(sigOf(Deno.lstatSync(d)).kind, "dir");
 * ```
 */
export function sigOf(st: Deno.FileInfo): Sig {
  return {
    kind: st.isFile ? "file" : st.isDirectory ? "dir" : st.isSymlink ? "symlink" : "other",
    ino: st.ino ?? 0,
    size: st.size,
    mtimeMs: st.mtime?.getTime() ?? 0,
  };
}

/** Whether two signatures (or absences) are the same. */
export function sameSig(a: Sig | null, b: Sig | null): boolean {
  if (a === null || b === null) return a === b;
  return a.kind === b.kind && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

/**
 * Keep the sandbox's version of a conflicting file (`from`, the upper
 * layer's) in `dir` under `rel`; returns where it is.
 */
export async function keepConflict(from: string, dir: string, rel: string): Promise<string> {
  const to = join(dir, rel);
  await Deno.mkdir(dirname(to), { recursive: true, mode: 0o700 });
  const st = await Deno.lstat(from);
  if (st.isSymlink) await Deno.symlink(await Deno.readLink(from), to);
  else if (st.isFile) await Deno.copyFile(from, to);
  else await Deno.mkdir(to, { recursive: true });
  return to;
}
