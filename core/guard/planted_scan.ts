/**
 * Where the protected entries of core/guard/planted.ts lie for one sandbox:
 * at the root of every write grant (and of the workspace, where a grant
 * holds it), in the folder a repository names in `core.hooksPath`, and
 * deeper where they already exist (a bounded scan: nested repositories,
 * a `sub/.vscode`). A missing entry is returned too, as a placeholder to
 * make (core/guard/placeholders.ts): the first missing folder on its way,
 * so that no `.git` is made in a folder that holds no repository.
 *
 * @module
 */
import { join } from "node:path";
import { isWithin } from "./namespace.ts";
import { placeholderCount } from "./placeholders.ts";
import {
  entryParts,
  HOOKS_PATH_ENTRY,
  hooksFolders,
  PLACEHOLDER_TEXT,
  PLANTED_DEFAULT_ENTRIES,
} from "./planted.ts";

/** One path a sandbox keeps read-only. */
export interface PlantedPath {
  path: string;
  /** It exists now (else a placeholder is made for it). */
  exists: boolean;
  /** A folder (for a placeholder: an empty folder, else an empty file). */
  dir: boolean;
  /** The placeholder's text, where an empty file would break a program. */
  text?: string;
}

/** Options of {@link plantedPaths}. */
export interface ScanOptions {
  /** The entries (default: the defaults). */
  entries?: readonly string[];
  /** The user's home, for a `core.hooksPath` set in the user's git config. */
  home?: string;
  /** How deep to look for existing entries below a root (default 3). */
  depth?: number;
  /**
   * How many folders to read per root at most (default 5000). A tree with
   * more (within `depth`) refuses the start: a tool that may write could
   * otherwise make folders until the scan stops before a nested repository.
   */
  limit?: number;
}

/** Folders never scanned for nested entries (large, and not opened by editors or git). */
const _SKIP = new Set(["node_modules", ".git", ".hg", ".svn", "target", ".venv"]);

/**
 * The protected paths inside `write` (absolute real paths). Throws an
 * `Error` naming the path when an entry is a symbolic link: a link in a
 * writable folder can be replaced, and a mount would follow it elsewhere.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { plantedPaths } from "./planted_scan.ts";
 * const ws = await Deno.realPath(await Deno.makeTempDir());
 * const found = plantedPaths([ws], ws);
 * assert.ok(found.some((p) => p.path === `${ws}/.git` && !p.exists && p.dir));
 * assert.ok(found.some((p) => p.path === `${ws}/.envrc` && !p.exists && !p.dir));
 * ```
 */
export function plantedPaths(write: string[], workspace: string, options: ScanOptions = {}) {
  const entries = options.entries ?? PLANTED_DEFAULT_ENTRIES;
  const out = new Map<string, PlantedPath>();
  const add = (p: PlantedPath) => {
    if (!out.has(p.path)) out.set(p.path, p);
  };
  for (const root of [workspace, ...write]) {
    // A root that is not there is not mounted (bwrap's --bind-try): nothing to keep inside.
    if (!_isDir(root)) continue;
    for (const e of entries) if (e !== HOOKS_PATH_ENTRY) _rooted(root, e, add);
    if (entries.includes(HOOKS_PATH_ENTRY)) {
      for (const h of hooksFolders(root, options.home)) {
        _rooted(root, h.slice(root.length + 1), add);
      }
    }
  }
  for (const root of write) _scan(root, entries, options, add);
  const kept: PlantedPath[] = [];
  for (const p of out.values()) {
    if (write.some((w) => isWithin(p.path, w))) kept.push(p);
    // A write grant inside a protected path is kept read-only whole.
    for (const w of write) {
      if (w !== p.path && isWithin(w, p.path)) kept.push({ path: w, exists: true, dir: true });
    }
  }
  return kept;
}

/** The entry `e` at `root`: what exists of it, else its first missing folder or itself. */
function _rooted(root: string, e: string, add: (p: PlantedPath) => void, onlyExisting = false) {
  const parts = e.replace(/\/+$/, "").split("/");
  let p = root;
  for (let i = 0; i < parts.length; i++) {
    p = join(p, parts[i]);
    const last = i === parts.length - 1;
    const st = _lstat(p);
    if (st?.isSymlink) {
      throw new Error(
        `"${p}" is a symbolic link where a protected entry ("${e}") lies: corral cannot keep it ` +
          `read-only. Replace the link by what it points to, or lift the entry with ` +
          `"unprotect": ["${e}"] in permissions.json`,
      );
    }
    if (!st) {
      if (onlyExisting) return;
      const dir = !last || e.endsWith("/");
      const text = last ? PLACEHOLDER_TEXT[entryParts(e).join("/")] : undefined;
      add({ path: p, exists: false, dir, ...(text ? { text } : {}) });
      return;
    }
    // A file where a folder is on the way (`.git` as a gitfile): that file is what git obeys.
    // An empty folder on the way (another corral process's placeholder, say) is kept whole,
    // as a missing one would be: nothing can be made in it, no repository either.
    if (last || !st.isDirectory || _empty(p)) {
      add({ path: p, exists: true, dir: st.isDirectory });
      return;
    }
  }
}

/** Entries that already exist below the root: nested repositories, a `sub/.vscode`. */
function _scan(
  root: string,
  entries: readonly string[],
  o: ScanOptions,
  add: (p: PlantedPath) => void,
) {
  const firsts = new Map<string, string[]>();
  for (const e of entries) {
    if (e === HOOKS_PATH_ENTRY) continue;
    const first = entryParts(e)[0];
    firsts.set(first, [...(firsts.get(first) ?? []), e]);
  }
  const limit = o.limit ?? 5000;
  let budget = limit;
  const queue: Array<[string, number]> = [[root, 0]];
  while (queue.length) {
    const [dir, depth] = queue.shift()!;
    // Fail closed: an unread folder may hold a repository whose config a tool could rewrite.
    if (--budget < 0) throw _tooMany(root, limit, o.depth ?? 3);
    let list: Deno.DirEntry[];
    try {
      list = [...Deno.readDirSync(dir)];
    } catch {
      continue;
    }
    for (const d of list) {
      const found = depth > 0 ? firsts.get(d.name.toLowerCase()) : undefined;
      if (found) {
        // A nested repository is protected like one at a root (placeholders too).
        const repo = d.name.toLowerCase() === ".git";
        for (const e of found) _rooted(dir, e, add, !repo);
        for (const h of repo ? hooksFolders(dir, o.home) : []) {
          _rooted(dir, h.slice(dir.length + 1), add);
        }
      }
      if (d.isDirectory && !d.isSymlink && depth + 1 < (o.depth ?? 3) && !_SKIP.has(d.name)) {
        queue.push([join(dir, d.name), depth + 1]);
      }
    }
  }
}

function _tooMany(root: string, limit: number, depth: number): Error {
  return new Error(
    `"${root}" holds more than ${limit} folders within ${depth} levels: corral cannot find every ` +
      `protected file below it (a nested repository's config, a sub-folder's .vscode/) to keep ` +
      `it read-only. Grant a narrower folder, or remove folders (node_modules, .venv and the ` +
      `like are not counted)`,
  );
}

function _empty(dir: string): boolean {
  try {
    return Deno.readDirSync(dir)[Symbol.iterator]().next().done === true;
  } catch {
    return false;
  }
}

/** A folder at its own real path: a root swapped for a symlink is left to the launcher, which refuses it. */
function _isDir(p: string): boolean {
  try {
    return Deno.statSync(p).isDirectory && Deno.realPathSync(p) === p;
  } catch {
    return false;
  }
}

/** What is at `p`; a placeholder another sandbox holds counts as missing (it is one again). */
function _lstat(p: string): Deno.FileInfo | undefined {
  if (placeholderCount(p) > 0) return undefined;
  try {
    return Deno.lstatSync(p);
  } catch {
    return undefined;
  }
}
