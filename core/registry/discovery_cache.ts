/**
 * The discovery cache: what a module's sandbox reported at import time,
 * keyed by the content of the module's local import graph and by what the
 * sandbox held (the fingerprint). An unchanged module is not imported
 * again; any edit to it or to a file it imports changes its key. Size and
 * mtime of the files are remembered so that an unchanged file is not read
 * and hashed again on the next start.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { localModuleGraph } from "../sandbox/module_graph.ts";
import type { ModuleMeta } from "../sandbox/protocol.ts";
import type { Reporter } from "../tool/reporter.ts";

/** The version of the cache format, part of every fingerprint. */
export const DISCOVERY_CACHE_VERSION = 5;
/** Files modified this recently are always re-hashed. */
const _RACY_MS = 3000;

/** A module's files with their size and mtime when its cache key was computed. */
interface _StatEntry {
  files: Array<[path: string, size: number, mtimeMs: number]>;
  key: string;
  /** Each file's SHA-256 (the pins, see core/sandbox/module_graph.ts), in `files` order. */
  hashes?: string[];
}

/**
 * The cache directory: `CORRAL_CACHE_DIR` (empty: no cache), else
 * `$XDG_CACHE_HOME/corral`, else `~/.cache/corral`; null without env access.
 */
export function defaultCacheDir(): string | null {
  try {
    const explicit = Deno.env.get("CORRAL_CACHE_DIR");
    // Absolute: a relative value means the current folder, now (as CORRAL_CONFIG_DIR).
    if (explicit !== undefined) return explicit === "" ? null : resolve(explicit);
    const xdg = Deno.env.get("XDG_CACHE_HOME");
    const home = Deno.env.get("HOME");
    if (xdg) return resolve(xdg, "corral");
    if (home) return join(home, ".cache", "corral");
  } catch { /* no env permission */ }
  return null;
}

/**
 * `discovery.json` in a cache directory (`null`: nothing is read or kept).
 * Read once, lazily; written by {@link DiscoveryCache.save} when it changed.
 *
 * @example
 * ```ts ignore
 * const cache = new DiscoveryCache("/home/me/.cache/corral", reporter);
 * const key = await cache.key("/srv/tools/a.ts", fingerprint);
 * const meta = await cache.get(key) ?? await importInSandbox();
 * cache.put(key, meta);
 * await cache.save();
 * ```
 */
export class DiscoveryCache {
  readonly #dir: string | null;
  readonly #reporter: Reporter;
  #modules: Record<string, ModuleMeta> | undefined;
  /** Size and mtime of each cached module's files, to skip re-hashing them. */
  #stats: Record<string, _StatEntry> | undefined;
  #loading: Promise<Record<string, ModuleMeta>> | undefined;
  #dirty = false;
  /** File texts read during one load (modules share core files). */
  #texts = new Map<string, Promise<string>>();
  /** Digests of fingerprints (many modules share one). */
  #digests = new Map<string, Promise<string>>();
  #digested = new Map<string, string>();
  /** Stat entries found unchanged during this load. */
  #unchanged = new Map<string, _StatEntry>();

  constructor(dir: string | null, reporter: Reporter) {
    this.#dir = dir;
    this.#reporter = reporter;
  }

  /** The cached report for a key, if any. */
  async get(key: string): Promise<ModuleMeta | undefined> {
    if (!key) return undefined;
    return (await this.#load())[key];
  }

  /** Remember a report: clean, or a failure of the module itself (see core/registry/discovery.ts). */
  put(key: string, meta: ModuleMeta): void {
    if (!key || !this.#modules) return;
    this.#modules[key] = meta;
    this.#dirty = true;
  }

  /** The cache key of a module: its local import graph's contents and the fingerprint. */
  async key(module: string, fingerprint: string): Promise<string> {
    if (!module.startsWith("/")) return ""; // packages: never cached
    await this.#load();
    // The fingerprint holds the plugin's config section (secrets): only its digest is kept.
    fingerprint = await this.#digest(fingerprint);
    const id = `${module}\0${fingerprint}`;
    const known = this.#stats?.[id];
    if (known && _statsMatch(known.files)) {
      this.#unchanged.set(id, known);
      return known.key;
    }
    try {
      const files = await localModuleGraph([module], {}, this.#read);
      const parts: string[] = [fingerprint, module];
      for (const f of files) parts.push(f, await this.#read(f));
      const digest = await crypto.subtle.digest(
        "SHA-256",
        new TextEncoder().encode(parts.join("\0")),
      );
      const key = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0"))
        .join("");
      // Remember size and mtime, so that the next start need not read and
      // hash unchanged files; files changed in the last seconds are not
      // remembered (an edit within the same mtime tick could go unseen).
      const stats = _fileStats(files);
      if (stats && this.#stats) {
        this.#stats[id] = { files: stats, key };
        this.#dirty = true;
      }
      return key;
    } catch {
      return "";
    }
  }

  /**
   * The pins of `module`'s files when {@link key} found them unchanged
   * (size and mtime) and their hashes are remembered; else undefined. A
   * sandbox checks its pins again before it starts, so a file changed
   * behind an unchanged size and mtime is refused there.
   */
  async pinsOf(module: string, fingerprint: string): Promise<Record<string, string> | undefined> {
    return _pins(this.#unchanged.get(`${module}\0${await this.#digest(fingerprint)}`));
  }

  /** Remember the hashes of `module`'s files from `pins` (computed by pinGraph). */
  async rememberPins(module: string, fingerprint: string, pins: Record<string, string>) {
    const entry = this.#stats?.[`${module}\0${await this.#digest(fingerprint)}`];
    if (!entry || entry.hashes) return;
    const hashes = entry.files.map(([f]) => pins[f]);
    if (hashes.every((h) => h && h !== "missing")) {
      entry.hashes = hashes;
      this.#dirty = true;
    }
  }

  #digest(fingerprint: string): Promise<string> {
    let digest = this.#digests.get(fingerprint);
    if (!digest) {
      digest = _sha256Hex(fingerprint);
      digest.then((d) => this.#digested.set(fingerprint, d), () => {});
      this.#digests.set(fingerprint, digest);
    }
    return digest;
  }

  /** Load the cache and digest `fingerprints`, so that {@link hit} can answer. */
  async prime(fingerprints: string[]): Promise<void> {
    await this.#load();
    await Promise.all([...new Set(fingerprints)].map((f) => this.#digest(f)));
  }

  /**
   * A module's cached report and pins, at once, when its files did not change
   * (size and mtime) and its fingerprint is primed; else undefined (then
   * {@link key} decides, reading what it must).
   */
  hit(
    module: string,
    fingerprint: string,
  ): { meta: ModuleMeta; pins: Record<string, string> } | undefined {
    const digest = this.#digested.get(fingerprint);
    if (!digest || !this.#modules || !module.startsWith("/")) return undefined;
    const id = `${module}\0${digest}`;
    const known = this.#stats?.[id];
    const pins = _pins(known);
    const meta = known && this.#modules[known.key];
    if (!pins || !meta || !_statsMatch(known.files)) return undefined;
    this.#unchanged.set(id, known);
    return { meta, pins };
  }

  /** Write the cache if it changed; forget the file texts read for this load. */
  async save(): Promise<void> {
    // File texts are remembered for one load only: later loads see edits.
    this.#texts.clear();
    this.#unchanged.clear();
    if (!this.#dir || !this.#dirty || !this.#modules) return;
    this.#dirty = false;
    try {
      await Deno.mkdir(this.#dir, { recursive: true });
      const tmp = join(this.#dir, `discovery.${crypto.randomUUID()}.tmp`);
      await Deno.writeTextFile(
        tmp,
        JSON.stringify({
          version: DISCOVERY_CACHE_VERSION,
          modules: this.#modules,
          stats: this.#stats,
        }),
      );
      await Deno.rename(tmp, join(this.#dir, "discovery.json"));
    } catch (err) {
      this.#reporter.line(
        `Warning: cannot write the discovery cache: ${(err as Error).message}`,
        "yellow",
      );
    }
  }

  #read = (file: string): Promise<string> => {
    let p = this.#texts.get(file);
    if (!p) {
      p = Deno.readTextFile(file);
      this.#texts.set(file, p);
    }
    return p;
  };

  /** Read once (concurrent discoveries share one object). */
  #load(): Promise<Record<string, ModuleMeta>> {
    return this.#loading ??= Promise.resolve().then(() => {
      let modules: Record<string, ModuleMeta> = {};
      let stats: Record<string, _StatEntry> = {};
      if (this.#dir) {
        try {
          // One file, read once at start: sync avoids a thread-pool trip.
          const data = JSON.parse(Deno.readTextFileSync(join(this.#dir, "discovery.json")));
          if (data && typeof data === "object" && data.version === DISCOVERY_CACHE_VERSION) {
            modules = data.modules ?? {};
            stats = data.stats ?? {};
          }
        } catch { /* no cache yet, or unreadable: start empty */ }
      }
      this.#modules = modules;
      this.#stats = stats;
      return modules;
    });
  }
}

/** The pins an entry remembers (every file's hash), or undefined. */
function _pins(entry: _StatEntry | undefined): Record<string, string> | undefined {
  if (!entry?.hashes || entry.hashes.length !== entry.files.length) return undefined;
  return Object.fromEntries(entry.files.map(([f], i) => [f, entry.hashes![i]]));
}

function _fileStats(files: string[]): _StatEntry["files"] | undefined {
  const now = Date.now();
  const out: _StatEntry["files"] = [];
  for (const f of files) {
    const st = Deno.statSync(f);
    const mtime = st.mtime?.getTime();
    if (mtime === undefined || now - mtime < _RACY_MS) return undefined;
    out.push([f, st.size, mtime]);
  }
  return out;
}

function _statsMatch(files: _StatEntry["files"]): boolean {
  try {
    for (const [f, size, mtime] of files) {
      // Sync: for many small files far cheaper than a promise each.
      const st = Deno.statSync(f);
      if (st.size !== size || st.mtime?.getTime() !== mtime) return false;
    }
    return true;
  } catch {
    return false;
  }
}

async function _sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
