/**
 * The files of a file-drop directory: which are plugin modules, and which
 * are rejected because they (or a file they import) leave the directory,
 * for instance through a symlink. The sandbox of a plugin gets read access
 * to its whole local import graph, so an escape would widen its grant.
 *
 * @module
 */
import { basename, extname, join } from "node:path";
import { CORE_DIR } from "../config/install_dir.ts";
import { isInside } from "../guard/paths.ts";
import { localModuleGraph } from "../sandbox/module_graph.ts";

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
 * Scan a file-drop directory: files ending `.ts`, `.js` or `.mjs`, not
 * starting with `_`, not `*_test.*`, sorted by name. A file (or a file it
 * imports) whose real path leaves the directory, for instance through a
 * symlink, is rejected. corral's own `core/` may be imported.
 */
export async function scanPluginDir(dir: string): Promise<DirScan> {
  const out: DirScan = { entries: [], files: [], rejected: [] };
  const root = await Deno.realPath(dir);
  const found: Array<{ name: string; link: boolean }> = [];
  // Sync: one call for the whole listing, where the async form pays a trip per batch.
  for (const e of Deno.readDirSync(dir)) {
    if (!e.isFile && !e.isSymlink) continue;
    if (!isPluginFileName(e.name)) continue;
    found.push({ name: e.name, link: e.isSymlink });
  }
  found.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  // Files are checked concurrently (a start with many plugins stays fast);
  // results keep the sorted order.
  const checked = await _mapLimit(found, 32, async ({ name, link }) => {
    const path = join(dir, name);
    let real = join(root, name); // a plain file in a real directory is its own real path
    if (link) {
      try {
        real = await Deno.realPath(path);
      } catch (err) {
        return { rejected: `rejected ${path}: cannot resolve it (${errorReason(err)})` };
      }
      if (!isInside(real, root)) {
        return {
          rejected:
            `rejected ${path}: it is a symlink to ${real}, outside the plugin directory ${dir}`,
        };
      }
      if (!(await Deno.stat(real)).isFile) return {};
    }
    const escape = await graphEscape(real, root);
    if (escape) return { rejected: `rejected ${path}: ${escape}` };
    return { entry: { file: real, stem: stemOf(name) } };
  });
  for (const c of checked) {
    if (c.rejected) out.rejected.push(c.rejected);
    if (c.entry) {
      out.entries.push(c.entry);
      out.files.push(c.entry.file);
    }
  }
  return out;
}

async function _mapLimit<T, R>(
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

/** Whether a file name is a plugin module: `.ts`/`.js`/`.mjs`, no `_` prefix, no `_test`. */
export function isPluginFileName(name: string): boolean {
  if (!/\.(ts|js|mjs)$/.test(name) || name.endsWith(".d.ts")) return false;
  return !name.startsWith("_") && !/_test\.(ts|js|mjs)$/.test(name);
}

let _coreReal: Promise<string> | undefined;
/** A quoted specifier that names a local file: `./`, `../`, `/` or `file:`. */
const _LOCAL_SPECIFIER = /["'](?:\.{1,2}\/|\/|file:)/;

/**
 * Why the local module graph of `file` leaves `root` (a file it imports
 * resolves outside it, e.g. through a symlinked directory), or undefined.
 * Files of corral's own `core/` are allowed. The sandbox gets read access
 * to every file of this graph, so an escape would widen the plugin's grant.
 */
export async function graphEscape(file: string, root: string): Promise<string | undefined> {
  const core = await (_coreReal ??= Deno.realPath(CORE_DIR).catch(() => CORE_DIR));
  // Plugin files are small: a sync read is far cheaper than a promise each.
  const text = Deno.readTextFileSync(file);
  // Most plugins import only packages ("zod", npm:…): no local file to follow.
  if (!_LOCAL_SPECIFIER.test(text)) return undefined;
  const read = (f: string) => Promise.resolve(f === file ? text : Deno.readTextFileSync(f));
  for (const f of await localModuleGraph([file], {}, read)) {
    if (f === file) continue;
    let real = f;
    try {
      real = await Deno.realPath(f);
    } catch { /* missing: judge the path as written */ }
    if (isInside(real, root) || isInside(real, core)) continue;
    const link = real === f ? "" : ` (through a symlink: ${f} -> ${real})`;
    return `it imports ${real}${link}, outside the plugin directory ${root} ` +
      `(a plugin may import files of its own directory and corral's core/)`;
  }
  return undefined;
}

/** The stem of a file name: `dice.ts` → `dice`. */
export function stemOf(name: string): string {
  return basename(name, extname(name));
}

/** Why a file operation failed, in a few words (`not found`, or the error's message). */
export function errorReason(err: unknown): string {
  if (err instanceof Deno.errors.NotFound) return "not found";
  return err instanceof Error ? err.message : String(err);
}
