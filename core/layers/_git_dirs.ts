/**
 * Repositories found the way git's own discovery finds them: a folder named
 * `.git`, the folder a gitfile's `gitdir:` names, and any folder that is
 * itself a git directory under any name (`HEAD` with `objects/` and
 * `refs/`, or with a `commondir`): git takes such a folder for a bare
 * repository, since `safe.bareRepository` defaults to `all`, and obeys its
 * `config` and runs its hooks.
 *
 * {@link isGitDir} asks it of one folder in the tree or in the tree as a
 * layer will leave it (./_merged_view.ts); {@link treeRepos} lists every
 * repository of a write root (and those above it) with GNU find, names as
 * bytes, with no limit: the judge reads their hooks folders from git
 * (./hooks_folders.ts).
 *
 * @module
 */
import { basename, dirname, join, resolve } from "node:path";
import { findRaw } from "./_raw_list.ts";
import type { Kind } from "./_merged_view.ts";

/** How a folder's entries are looked up: `has(name)` says what `name` is in it. */
export type Lookup = (name: string) => Promise<Kind | null>;

/**
 * Whether the folder whose entries `has` looks up is a git directory, as
 * git's `is_git_directory` decides: a `HEAD`, and `objects` and `refs`, or a
 * `commondir` naming where those are.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isGitDir } from "./_git_dirs.ts";
 * const shape = (names: Record<string, "file" | "dir">) => (n: string) =>
 *   Promise.resolve(names[n] ?? null);
 * assert.equal(await isGitDir(shape({ HEAD: "file", objects: "dir", refs: "dir" })), true);
 * assert.equal(await isGitDir(shape({ HEAD: "file", commondir: "file" })), true);
 * assert.equal(await isGitDir(shape({ HEAD: "file", refs: "dir" })), false);
 * ```
 */
export async function isGitDir(has: Lookup): Promise<boolean> {
  const head = await has("HEAD");
  if (head !== "file" && head !== "symlink") return false;
  if ((await has("commondir")) !== null) return true;
  const [objects, refs] = await Promise.all([has("objects"), has("refs")]);
  const dirLike = (k: Kind | null) => k === "dir" || k === "symlink";
  return dirLike(objects) && dirLike(refs);
}

/** One repository of the tree. */
export interface TreeRepo {
  /** Its git directory (where `HEAD` is). */
  gitDir: string;
  /** Its common directory (where `config`, `hooks/` and the refs are): `commondir`'s, else gitDir. */
  commonDir: string;
  /** The folder git runs hooks in: the top of its worktree, or the git directory when bare. */
  top: string;
}

/**
 * Every repository in `root` and above it: `.git` folders and gitfiles
 * (their worktree is the folder that holds them), and folders that are git
 * directories under another name (bare). Inside a git directory nothing is
 * searched further: what is there is the repository's own.
 */
export async function treeRepos(root: string): Promise<TreeRepo[]> {
  const out = new Map<string, TreeRepo>();
  const add = (r: TreeRepo | undefined) => {
    if (r && !out.has(`${r.gitDir}\0${r.top}`)) out.set(`${r.gitDir}\0${r.top}`, r);
  };
  // git's discovery climbs: a repository above the root may name a hooks folder inside it.
  for (let d = root; d !== "/";) {
    d = dirname(d);
    add(await _dotGit(join(d, ".git"), d));
    if (await isGitDir(_treeLookup(d))) add(await _bare(d));
  }
  // `.git` folders and gitfiles (a .git folder's inside is its own), and every HEAD.
  const found = await findRaw(root, ["-mindepth", "0"], (print) => [
    ...["(", "-name", ".git", "(", "-type", "d", "-o", "-type", "f", ")", ...print, "-prune", ")"],
    ...["-o", "(", "-name", "HEAD", "(", "-type", "f", "-o", "-type", "l", ")", ...print, ")"],
  ], true); // a folder no one can read here holds nothing a tool changed
  for (const e of found) {
    if (!e.utf8) continue; // nothing there can be named to git; a change there is refused
    const abs = join(root, e.rel);
    if (basename(abs) === ".git") add(await _dotGit(abs, dirname(abs)));
    else if (await isGitDir(_treeLookup(dirname(abs)))) add(await _bare(dirname(abs)));
  }
  return [...out.values()];
}

/** A `.git` at `at` (a folder, or a gitfile naming one), with the worktree `top`. */
async function _dotGit(at: string, top: string): Promise<TreeRepo | undefined> {
  let st: Deno.FileInfo;
  try {
    st = await Deno.lstat(at);
  } catch {
    return undefined;
  }
  let gitDir = at;
  if (st.isFile) {
    const text = await Deno.readTextFile(at).catch(() => "");
    const m = text.match(/^gitdir:\s*(.+?)\s*$/m);
    if (!m) return undefined;
    gitDir = resolve(dirname(at), m[1]);
  } else if (!st.isDirectory) return undefined;
  return { gitDir, commonDir: await commonDirOf(gitDir), top };
}

async function _bare(gitDir: string): Promise<TreeRepo> {
  return { gitDir, commonDir: await commonDirOf(gitDir), top: gitDir };
}

/** The common directory of `gitDir`: where its `commondir` file points, else itself. */
export async function commonDirOf(gitDir: string): Promise<string> {
  try {
    const text = (await Deno.readTextFile(join(gitDir, "commondir"))).trim();
    if (text) return resolve(gitDir, text);
  } catch { /* none */ }
  return gitDir;
}

function _treeLookup(dir: string): Lookup {
  return async (name) => {
    try {
      const st = await Deno.lstat(join(dir, name));
      return st.isSymlink ? "symlink" : st.isFile ? "file" : st.isDirectory ? "dir" : "other";
    } catch {
      return null;
    }
  };
}
