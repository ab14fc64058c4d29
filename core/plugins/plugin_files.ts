/**
 * Whether a plugin stays inside its folder: its file (a symlink's target
 * too) and every local file it imports must lie in its directory (or in
 * corral's own `core/`). The sandbox of a plugin gets read access to its
 * whole local import graph, so an escape would widen its grant. Which files
 * are plugins is the settings' part (core/config/plugin_set.ts).
 *
 * @module
 */
import { dirname } from "node:path";
import { CORE_DIR, dirPluginFiles, type PluginCandidate, stemOf } from "../config/mod.ts";
import { isInside } from "../guard/mod.ts";
import { localModuleGraph } from "../sandbox/mod.ts";

export { errorReason, isPluginFileName, stemOf } from "../config/mod.ts";

/** The plugin files of one directory, and the files rejected with the reason. */
export interface DirScan {
  /** Accepted plugin files: real path and the stem of the name in the directory. */
  entries: Array<{ file: string; stem: string }>;
  /** The accepted real paths. */
  files: string[];
  /** One line per rejected file. */
  rejected: string[];
}

/**
 * Scan a file-drop directory: its plugin files (core/config/plugin_set.ts),
 * sorted by name, each checked by {@link confinement}. corral's own `core/`
 * may be imported.
 */
export async function scanPluginDir(dir: string): Promise<DirScan> {
  const out: DirScan = { entries: [], files: [], rejected: [] };
  const root = await Deno.realPath(dir);
  const files = await dirPluginFiles(dir, root, out.rejected);
  const checked = await mapLimit(files, 32, (f) => confinement({ ...f, root }));
  for (const [i, c] of checked.entries()) {
    if (c === "skip") continue;
    if (c) out.rejected.push(`rejected ${files[i].path}: ${c}`);
    else {
      out.entries.push({ file: files[i].module, stem: stemOf(files[i].path.split("/").pop()!) });
      out.files.push(files[i].module);
    }
  }
  return out;
}

/**
 * Why `candidate` is rejected, `"skip"` when it is no file after all (a
 * symlink to a folder), or undefined: it stays inside its folder. A remote
 * package has no folder to stay in.
 */
export async function confinement(
  candidate: Pick<PluginCandidate, "module" | "path" | "root" | "link">,
  known?: KnownImports,
): Promise<string | undefined | "skip"> {
  const { module, path, root, link } = candidate;
  if (!root) return undefined;
  // A file the discovery cache knows unchanged was just found a file (one `stat`).
  if (!known?.(module)) {
    try {
      if (!(await Deno.stat(module)).isFile) return "skip";
    } catch {
      return "skip";
    }
  }
  return await graphEscape(module, root, link ? dirname(path) : undefined, known);
}

/**
 * The local files a file imports, remembered by the discovery cache while
 * its size and mtime are unchanged (core/registry/discovery_cache.ts
 * `knownImports`), or undefined: then it is read.
 */
export type KnownImports = (file: string) => readonly string[] | undefined;

/** `fn` over `items`, at most `limit` at once; results keep the order. */
export async function mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

let _coreReal: Promise<string> | undefined;

/** `file`'s local graph from remembered imports alone (unchanged files), else undefined. */
function _knownGraph(file: string, known?: KnownImports): string[] | undefined {
  if (!known) return undefined;
  const graph = new Set<string>();
  const queue = [file];
  while (queue.length) {
    const f = queue.pop()!;
    // corral's own core/ may be imported (the check below allows it): not followed.
    if (graph.has(f) || (f !== file && isInside(f, CORE_DIR))) continue;
    const imports = known(f);
    if (!imports) return undefined;
    graph.add(f);
    queue.push(...imports);
  }
  return [...graph].sort();
}

/** `file`'s local graph, read. */
async function _readGraph(file: string): Promise<string[]> {
  // Plugin files are small: a sync read is far cheaper than a promise each.
  const text = Deno.readTextFileSync(file);
  const read = (f: string) => Promise.resolve(f === file ? text : Deno.readTextFileSync(f));
  // Most plugins import only packages ("zod", npm:…): no local file to follow.
  return _LOCAL_SPECIFIER.test(text) ? await localModuleGraph([file], {}, read) : [file];
}
/** A quoted specifier that names a local file: `./`, `../`, `/` or `file:`. */
const _LOCAL_SPECIFIER = /["'](?:\.{1,2}\/|\/|file:)/;

/**
 * Why the local module graph of `file` leaves `root` (a file it imports
 * resolves outside it, e.g. through a symlinked directory), or undefined.
 * Files of corral's own `core/` are allowed. The sandbox gets read access
 * to every file of this graph, so an escape would widen the plugin's grant.
 * With `linkedFrom` (the folder of the symlink that named it), `file`
 * itself must lie in `root` too.
 */
export async function graphEscape(
  file: string,
  root: string,
  linkedFrom?: string,
  known?: KnownImports,
): Promise<string | undefined> {
  const core = await (_coreReal ??= Deno.realPath(CORE_DIR).catch(() => CORE_DIR));
  const graph = _knownGraph(file, known) ?? await _readGraph(file);
  for (const f of graph) {
    if (f === file && linkedFrom === undefined) continue;
    let real = f;
    try {
      real = await Deno.realPath(f);
    } catch { /* missing: judge the path as written */ }
    if (isInside(real, root) || (f !== file && isInside(real, core))) continue;
    if (f === file) return `it is a symlink to ${real}, outside the plugin directory ${linkedFrom}`;
    const link = real === f ? "" : ` (through a symlink: ${f} -> ${real})`;
    return `it imports ${real}${link}, outside the plugin directory ${root} ` +
      `(a plugin may import files of its own directory and corral's core/)`;
  }
  return undefined;
}
