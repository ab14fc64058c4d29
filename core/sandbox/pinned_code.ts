/**
 * What runs is what was pinned: a sandbox imports a plugin's files from a
 * private, content-addressed, read-only copy in corral's code store
 * (core/config/install_dir.ts `codeStoreDir`, part of the trust base),
 * never from a path anyone can still change. Each file is read once,
 * hashed, compared with its pin and written to the copy from those very
 * bytes. The copies of one module set sit under a folder named by the
 * digest of the set (`<store>/<digest>/src/<original path>`), so relative
 * imports between them keep working; a relative import of corral's own
 * `core/` (trusted, never copied: one module instance for the runtime and
 * the plugin) is pointed at corral's file by an absolute `file:` URL.
 * corral's own `core/` and `toolsets/` need no copy: they are the install
 * folder, which no tool may change. A host that cannot write the store
 * (no write permission, a read-only cache) still runs corral's own code;
 * a set that needs copies not made before is refused (fail closed).
 *
 * @module
 */
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { CORE_DIR, INSTALL_DIR } from "../config/mod.ts";
import { isWithin } from "../jail/mod.ts";
import { IMPORT_SPECIFIER, type Pins, resolveLocal, sha256Hex } from "./module_graph.ts";
import type { HostMessage, ModuleMeta } from "./protocol.ts";
import { pathExists } from "../base/mod.ts";

const _TOOLSETS_DIR = join(INSTALL_DIR, "toolsets");
const _TEXT = /\.[cm]?[jt]sx?$/;

/** A module set's folder in the code store, and how its paths map. */
export interface PinnedCode {
  /** `<store>/<digest>`: the copies (`src/`) and the set's own Deno cache (`cache/`). */
  dir: string;
  /** Original path → the path imported (its copy; corral's own files map to themselves). */
  paths: Map<string, string>;
  /** The copies' prefix, `<dir>/src` (stripped from messages). */
  prefix: string;
}

/**
 * Whether `file` is corral's own code (its `core/` or `toolsets/`), which
 * is imported in place.
 */
export function trustedCode(file: string): boolean {
  return isWithin(file, CORE_DIR) || isWithin(file, _TOOLSETS_DIR);
}

/**
 * The copies of `pins` in the code store under `store`, made now from the
 * files' current bytes when they match their pins, or the reason why not
 * (a file changed since it was pinned). `salt` adds what else the set's
 * folder depends on (Deno's version, the lock file, the entry points).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pinGraph } from "./module_graph.ts";
 * import { pinnedCode } from "./pinned_code.ts";
 * const store = await Deno.makeTempDir();
 * const file = `${await Deno.makeTempDir()}/p.ts`;
 * await Deno.writeTextFile(file, "export const a = 1;\n");
 * const code = await pinnedCode(await pinGraph([file]), store, "");
 * assert.ok(typeof code !== "string");
 * assert.equal(Deno.readTextFileSync(code.paths.get(file)!), "export const a = 1;\n");
 * ```
 */
export async function pinnedCode(
  pins: Pins,
  store: string,
  salt: string,
  known?: KnownBytes,
): Promise<PinnedCode | string> {
  // A host without write permission (or on a read-only file system) cannot make the store:
  // corral's own code needs no copy, a set copied before is used, anything else is refused.
  const unwritable = await Deno.mkdir(store, { recursive: true, mode: 0o700 })
    .then(() => undefined, (err: Error) => err.message);
  // A real path: the namespace's launcher binds it only as exactly itself.
  store = await Deno.realPath(store).catch(() => store);
  const entries = Object.entries(pins).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  const digest = await sha256Hex(new TextEncoder().encode(JSON.stringify([1, salt, entries])));
  const dir = join(store, digest.slice(0, 32));
  const prefix = join(dir, "src");
  const paths = new Map<string, string>();
  const copied = new Set<string>();
  for (const [file, hash] of entries) {
    if (!file.startsWith("/") || trustedCode(file) || hash === "missing") paths.set(file, file);
    else {
      paths.set(file, prefix + file);
      copied.add(file);
    }
  }
  if (pathExists(dir)) _touch(dir);
  else if (unwritable === undefined) _prune ??= _pruneStore(store).catch(() => {});
  if (copied.size === 0 || pathExists(prefix)) return { dir, paths, prefix };
  if (unwritable !== undefined) return _unpinnable(copied, store, unwritable);
  const tmp = `${prefix}.${crypto.randomUUID()}.tmp`;
  try {
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const changed = await _copyPinned(copied, pins, tmp, prefix, known);
    if (changed) return _changed(changed);
    try {
      await Deno.rename(tmp, prefix);
    } catch (err) {
      // Another corral made the same copies first: they are the same bytes.
      if (!pathExists(prefix)) throw err;
    }
    return { dir, paths, prefix };
  } catch (err) {
    return _unpinnable(copied, store, (err as Error).message);
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

/**
 * The bytes of a file as its caller read and hashed them (discovery reads
 * and hashes each file once, core/registry/file_index.ts), if it did.
 */
export type KnownBytes = (
  file: string,
) => Promise<{ bytes: Uint8Array; hash: string } | undefined>;

/**
 * Copy each of `copied` under `tmp`: read once, hashed, and written from the
 * very bytes that were hashed (by `known`'s reader when it read them for this
 * very pin). Returns the first file that no longer matches its pin, or
 * undefined.
 */
async function _copyPinned(
  copied: Set<string>,
  pins: Pins,
  tmp: string,
  prefix: string,
  known?: KnownBytes,
): Promise<string | undefined> {
  for (const file of copied) {
    let bytes: Uint8Array;
    const given = await known?.(file);
    if (given && given.hash === pins[file]) bytes = given.bytes;
    else {
      try {
        bytes = await Deno.readFile(file);
      } catch {
        return file;
      }
      if (await sha256Hex(bytes) !== pins[file]) return file;
    }
    const out = tmp + file;
    await Deno.mkdir(dirname(out), { recursive: true, mode: 0o700 });
    const text = _TEXT.test(file) ? _pointAtCorral(bytes, file, copied, prefix) : bytes;
    await Deno.writeFile(out, text, { mode: 0o444 });
  }
  return undefined;
}

/** Why a set whose copies cannot be written is refused (fail closed: never run unpinned). */
function _unpinnable(copied: Set<string>, store: string, why: string): string {
  const files = [...copied].slice(0, 3).map((f) => `"${f}"`).join(", ");
  return `not started: cannot pin ${files}${copied.size > 3 ? ", …" : ""}: corral runs a ` +
    `plugin only from its pinned copy in the code store ${store}, which this host cannot ` +
    `write (${why}); start corral with write access to it (--allow-write, or ` +
    `CORRAL_CACHE_DIR set to a writable folder)`;
}

/** Sets unused this long are removed (their next use makes them again). */
const _UNUSED_MS = 14 * 24 * 3600 * 1000;
let _prune: Promise<void> | undefined;

/** A set's folder was used now (its mtime: {@link _pruneStore} keeps it). */
function _touch(dir: string): void {
  try {
    const now = new Date();
    Deno.utimeSync(dir, now, now);
  } catch { /* kept or made again */ }
}

/** Remove the store's module sets that no sandbox used for {@link _UNUSED_MS} (once a process). */
async function _pruneStore(store: string): Promise<void> {
  const old = Date.now() - _UNUSED_MS;
  for await (const e of Deno.readDir(store)) {
    if (!e.isDirectory || !/^[0-9a-f]{32}$/.test(e.name)) continue;
    const at = (await Deno.stat(join(store, e.name)).catch(() => undefined))?.mtime?.getTime();
    if (at !== undefined && at < old) {
      await Deno.remove(join(store, e.name), { recursive: true }).catch(() => {});
    }
  }
}

function _changed(file: string): string {
  return `not started: "${file}" changed since corral checked it at discovery (restart ` +
    `corral, or run it with --watch, to check the new version)`;
}

/**
 * The text of a copy: an import of a file that is not copied (corral's
 * `core/`) by a relative path points at corral's file by its `file:` URL;
 * an absolute import of a copied file points at its copy. Everything else
 * is the pinned text, unchanged.
 */
function _pointAtCorral(
  bytes: Uint8Array,
  file: string,
  copied: Set<string>,
  prefix: string,
): Uint8Array {
  const text = new TextDecoder().decode(bytes);
  let changed = false;
  const out = text.replace(IMPORT_SPECIFIER, (match: string, a?: string, b?: string) => {
    const spec = a ?? b ?? "";
    const target = resolveLocal(spec, file);
    if (!target) return match;
    const relative = spec.startsWith("./") || spec.startsWith("../");
    let to: string | undefined;
    if (relative && trustedCode(target)) to = pathToFileURL(target).href;
    else if (!relative && copied.has(target)) to = pathToFileURL(prefix + target).href;
    if (!to) return match;
    const at = match.lastIndexOf(spec);
    changed = true;
    return match.slice(0, at) + to + match.slice(at + spec.length);
  });
  return changed ? new TextEncoder().encode(out) : bytes;
}

/** `path` as the sandbox imports it (its copy when copied). */
export function insidePath(code: PinnedCode | undefined, path: string): string {
  return code?.paths.get(path) ?? path;
}

/** `text` with the copies' prefix taken out: messages name the original files. */
export function outsideText(code: PinnedCode | undefined, text: string): string {
  if (!code || !text.includes(code.prefix)) return text;
  return text.replaceAll(`file://${code.prefix}/`, "file:///").replaceAll(`${code.prefix}/`, "/");
}

/** Whether the copies were removed since they were made (a cleared cache). */
export function pinnedGone(code: PinnedCode | undefined): boolean {
  return code !== undefined && !pathExists(code.dir);
}

/** A load message (./protocol.ts), as sent. */
type _Load = Extract<HostMessage, { type: "load" }>;

/**
 * The load message of request `r` (what a load asks: its modules, env and
 * isolation) as the sandbox gets it: the copies' paths.
 */
export function insideLoad(
  code: PinnedCode | undefined,
  id: number,
  r: Omit<_Load, "type" | "id">,
): _Load {
  const inside = (l: string[]) => l.map((p) => insidePath(code, p));
  return {
    type: "load",
    id,
    modules: inside(r.modules),
    env: r.env,
    ...(r.isolate ? { isolate: { ...r.isolate, read: inside(r.isolate.read) } } : {}),
  };
}

/**
 * The sandbox's descriptions of the copies of `asked`, checked by
 * `accept`, as descriptions of the original files.
 */
export function outsideMetas(
  code: PinnedCode | undefined,
  asked: string[],
  accept: (asked: string[], metas: unknown) => ModuleMeta[],
  metas: unknown,
): ModuleMeta[] {
  return accept(asked.map((p) => insidePath(code, p)), metas).map((m, i) => ({
    ...m,
    module: asked[i],
    problems: m.problems.map((p) => outsideText(code, p)),
    ...(m.error !== undefined ? { error: outsideText(code, m.error) } : {}),
  }));
}
