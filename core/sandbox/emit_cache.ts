/**
 * A module set's own Deno cache, for the sandbox namespace. The host's
 * Deno cache (`DENO_DIR`) holds the compiled JavaScript of every
 * TypeScript file Deno ever compiled on the machine, and sqlite caches
 * with more of it: a namespace never sees it. Instead each module set
 * (its digest names a folder of the code store, core/sandbox/pinned_code.ts)
 * gets `cache/deno/`, made once by the host and bound read-only:
 *
 * - the npm packages its modules import, with their dependencies, and its
 *   remote modules (hard links into the host's cache, copies across file
 *   systems), as `deno info` finds them (network blocked: nothing is
 *   downloaded);
 * - `cache/deno.lock`: corral's lock file narrowed to those packages (bound
 *   at corral's `deno.lock` in the namespace, so the sandbox's `--frozen`
 *   run can load nothing else);
 * - the compiled output of its own files and of corral's sandbox entry
 *   points, emitted by `deno install --entrypoint --cached-only --frozen`
 *   into this cache, writable then, at the very paths the sandbox imports
 *   (a read-only cache without them costs about 175 ms per start). That
 *   executes nothing;
 * - V8's code cache for corral's own modules (imported once, trusted code
 *   only), and every sqlite cache folded out of write-ahead mode. Measured:
 *   a read-only cache without the code cache, or whose content still sits
 *   in a `-wal` file, cost about 60–100 ms more per start.
 *
 * Making one takes about 0.3 s, once per module set.
 *
 * @module
 */
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { INSTALL_DIR } from "../config/mod.ts";
import { isWithin } from "../jail/mod.ts";
import { trustedCode } from "./pinned_code.ts";
import { pathExists } from "../base/mod.ts";

const _CONFIG = join(INSTALL_DIR, "deno.json");

/** The layout of a module set's cache: a new one makes new folders (part of their digest). */
export const CACHE_FORMAT = 3;
/** Every download of `deno info` goes to a closed port: the host never downloads here. */
const _OFFLINE = {
  HTTP_PROXY: "http://127.0.0.1:9",
  HTTPS_PROXY: "http://127.0.0.1:9",
  ALL_PROXY: "http://127.0.0.1:9",
  NO_PROXY: "",
};

/** Where a module set's own cache is. */
export interface PrivateCache {
  /** The `DENO_DIR` of its sandboxes. */
  denoDir: string;
  /** The lock file they run `--frozen` with. */
  lock: string;
}

/**
 * The Deno cache of the module set in `dir` (made on first use): `files`
 * are the local files its sandbox imports (entry points included),
 * `specifiers` its other modules (`npm:`, `https:`), `shared` the host's
 * `DENO_DIR`. Never throws for a module that does not resolve: its
 * sandbox reports Deno's own error.
 *
 * @example
 * ```ts ignore
 * const cache = await privateDenoCache({ dir, files, specifiers: [], shared: "/root/.cache/deno" });
 * // DENO_DIR=cache.denoDir deno run --cached-only --frozen --lock=cache.lock …
 * ```
 */
export function privateDenoCache(o: _CacheSpec): Promise<PrivateCache> {
  const final = join(o.dir, "cache");
  const made = { denoDir: join(final, "deno"), lock: join(final, "deno.lock") };
  if (pathExists(made.lock)) return Promise.resolve(made);
  // Sandboxes of one set starting at once (sessions' first calls) wait for one making.
  let making = _making.get(final);
  if (!making) {
    making = _make(o, final, made).finally(() => _making.delete(final));
    _making.set(final, making);
  }
  return making;
}

/** What {@link privateDenoCache} makes a cache of. */
interface _CacheSpec {
  dir: string;
  files: string[];
  specifiers: string[];
  shared: string;
  /** Hosts its remote modules come from (`--allow-import`). */
  imports?: string[];
}

const _making = new Map<string, Promise<PrivateCache>>();

async function _make(o: _CacheSpec, final: string, made: PrivateCache): Promise<PrivateCache> {
  await Deno.mkdir(o.dir, { recursive: true, mode: 0o700 });
  const tmp = `${final}.${crypto.randomUUID()}.tmp`;
  const denoDir = join(tmp, "deno");
  try {
    await Deno.mkdir(denoDir, { recursive: true, mode: 0o700 });
    const root = join(tmp, "root.ts");
    const urls = [...new Set(o.files)].map((f) => pathToFileURL(f).href);
    await Deno.writeTextFile(
      root,
      [...urls, ...o.specifiers].map((s) => `import ${JSON.stringify(s)};\n`).join(""),
    );
    const allow = o.imports?.length ? [`--allow-import=${o.imports.join(",")}`] : [];
    const info = await denoInfo(root, allow);
    const lockText = await Deno.readTextFile(join(INSTALL_DIR, "deno.lock")).catch(() => "{}");
    const lock = JSON.parse(lockText) as DenoLock;
    const packages = _closure(info);
    for (const p of packages) {
      const local = info.npmPackages?.[p]?.localPath;
      if (local && isWithin(local, o.shared)) {
        await _link(local, join(denoDir, relative(o.shared, local)));
      }
    }
    const remote = new Set<string>();
    for (const m of info.modules ?? []) {
      if (!/^(https?|jsr):/.test(m.specifier) || !m.local) continue;
      remote.add(m.specifier);
      if (isWithin(m.local, o.shared)) {
        await _link(m.local, join(denoDir, relative(o.shared, m.local)));
      }
    }
    await Deno.writeTextFile(
      join(tmp, "deno.lock"),
      JSON.stringify(narrowLock(lock, packages, remote)),
    );
    await _emit([...urls, ...o.specifiers], denoDir, join(tmp, "deno.lock"), allow);
    // corral's own modules (never a plugin's) run once here, so that V8's code cache exists.
    const own = o.files.filter((f) => trustedCode(f) && !f.endsWith("/sandbox_worker.ts"));
    await _warm(own, tmp);
    await _settle(denoDir);
    await Deno.remove(root).catch(() => {});
    try {
      await Deno.rename(tmp, final);
    } catch (err) {
      if (!pathExists(made.lock)) throw err; // else: another corral made the same cache first
    }
    return made;
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

/** What `deno info --json` says of a module graph (the parts corral reads). */
export interface DenoInfo {
  modules?: Array<{
    specifier: string;
    kind?: string;
    local?: string;
    npmPackage?: string;
    dependencies?: Array<{ code?: { specifier?: string } }>;
  }>;
  redirects?: Record<string, string>;
  npmPackages?: Record<
    string,
    { name: string; version: string; dependencies?: string[]; localPath?: string }
  >;
}

/** corral's lock file (the parts corral reads). */
export interface DenoLock {
  specifiers?: Record<string, string>;
  npm?: Record<string, unknown>;
  remote?: Record<string, string>;
  [key: string]: unknown;
}

/** `deno info --json` of `root` with corral's config, offline (nothing is downloaded). */
export async function denoInfo(root: string, allow: string[] = []): Promise<DenoInfo> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", `--config=${_CONFIG}`, ...allow, root],
    cwd: INSTALL_DIR,
    env: _OFFLINE,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  try {
    return JSON.parse(new TextDecoder().decode(out.stdout)) as DenoInfo;
  } catch {
    return {};
  }
}

/** The npm packages (lock keys) the graph's npm modules need, dependencies included. */
function _closure(info: DenoInfo): Set<string> {
  const all = info.npmPackages ?? {};
  const keys = Object.keys(all);
  const todo: string[] = [];
  for (const m of info.modules ?? []) {
    const hit = m.specifier.match(/^npm:\/?((?:@[^/@]+\/)?[^/@]+)@([^/]+)/);
    if (!hit) continue;
    const nv = `${hit[1]}@${hit[2]}`;
    todo.push(...keys.filter((k) => k === nv || k.startsWith(`${nv}_`)));
  }
  const seen = new Set<string>();
  while (todo.length) {
    const k = todo.pop()!;
    if (seen.has(k) || !all[k]) continue;
    seen.add(k);
    todo.push(...(all[k].dependencies ?? []));
  }
  return seen;
}

/** corral's lock file with only `packages` and `remote` in it. */
export function narrowLock(lock: DenoLock, packages: Set<string>, remote: Set<string>): DenoLock {
  const specifiers: Record<string, string> = {};
  for (const [spec, version] of Object.entries(lock.specifiers ?? {})) {
    const name = spec.match(/^npm:((?:@[^/@]+\/)?[^/@]+)@/)?.[1];
    if (name && packages.has(`${name}@${version}`)) specifiers[spec] = version;
  }
  const npm = Object.fromEntries(Object.entries(lock.npm ?? {}).filter(([k]) => packages.has(k)));
  const kept = Object.entries(lock.remote ?? {}).filter(([url]) => remote.has(url));
  return {
    ...lock,
    specifiers,
    npm,
    ...(lock.remote ? { remote: Object.fromEntries(kept) } : {}),
  };
}

/** Emit the JavaScript of `urls` into `denoDir` (executes nothing, downloads nothing). */
async function _emit(
  urls: string[],
  denoDir: string,
  lock: string,
  allow: string[],
): Promise<void> {
  try {
    await new Deno.Command(Deno.execPath(), {
      args: [
        "install",
        "--entrypoint",
        "--cached-only",
        "--frozen",
        `--config=${_CONFIG}`,
        `--lock=${lock}`,
        ...allow,
        ...urls,
      ],
      cwd: INSTALL_DIR,
      env: { ..._OFFLINE, DENO_DIR: denoDir },
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
  } catch { /* the sandbox reports the real error */ }
}

/**
 * Import corral's own modules `files` (trusted: the entry points and built-in
 * toolsets, never a plugin) once in `tmp`'s cache, writable then: V8's code
 * cache gets made and filled for them. Without it, a read-only cache costs
 * every start about 100 ms (Deno retries making it).
 */
async function _warm(files: string[], tmp: string): Promise<void> {
  const script = join(tmp, "warm.ts");
  const urls = [...new Set(files)].map((f) => pathToFileURL(f).href);
  await Deno.writeTextFile(script, urls.map((u) => `import ${JSON.stringify(u)};\n`).join(""));
  try {
    await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--cached-only",
        "--frozen",
        "--no-check",
        "--no-prompt",
        `--config=${_CONFIG}`,
        `--lock=${join(tmp, "deno.lock")}`,
        script,
      ],
      cwd: INSTALL_DIR,
      env: { ..._OFFLINE, DENO_DIR: join(tmp, "deno") },
      stdin: "null",
      stdout: "null",
      stderr: "null",
      signal: AbortSignal.timeout(20_000),
    }).output();
  } catch { /* no code cache: slower starts, nothing else */ }
  await Deno.remove(script).catch(() => {});
}

/**
 * Deno's sqlite caches in `denoDir` with their write-ahead logs folded in
 * (`journal_mode=DELETE`): a read-only cache whose content still sits in a
 * `-wal` file cannot be read without writing, and Deno then works without
 * it, slowly.
 */
async function _settle(denoDir: string): Promise<void> {
  let sqlite: typeof import("node:sqlite") | undefined;
  for await (const e of Deno.readDir(denoDir)) {
    if (!e.isFile || !/_v\d+$/.test(e.name)) continue;
    try {
      sqlite ??= await import("node:sqlite");
      const db = new sqlite.DatabaseSync(join(denoDir, e.name));
      db.exec("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;");
      db.close();
    } catch { /* left as it is: slower starts, nothing else */ }
  }
}

/** Hard-link `from` (a file or a folder, recursively) to `to`; copy across file systems. */
async function _link(from: string, to: string): Promise<void> {
  let st: Deno.FileInfo;
  try {
    st = await Deno.lstat(from);
  } catch {
    return;
  }
  if (st.isDirectory) {
    await Deno.mkdir(to, { recursive: true });
    for await (const e of Deno.readDir(from)) await _link(join(from, e.name), join(to, e.name));
    return;
  }
  if (!st.isFile) return;
  await Deno.mkdir(dirname(to), { recursive: true });
  try {
    await Deno.link(from, to);
  } catch {
    await Deno.copyFile(from, to).catch(() => {});
  }
}
