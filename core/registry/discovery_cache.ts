/**
 * The discovery cache: what a module's sandbox reported at import time,
 * keyed by the content of the module's local import graph (each file's
 * SHA-256: its pins) and by what the sandbox held (the fingerprint). An
 * unchanged module is not imported again; any edit to it or to a file it
 * imports changes its key. What is known of each file (size, mtime, hash,
 * imports) is remembered per file (./file_index.ts): an edit costs the
 * reading and hashing of that file alone.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { sha256Hex } from "../base/mod.ts";
import type { ModuleMeta, Pins } from "../sandbox/mod.ts";
import type { Reporter } from "../tool/mod.ts";
import { type FileEntry, FileIndex } from "./file_index.ts";

/** The version of the cache format, part of every fingerprint. */
export const DISCOVERY_CACHE_VERSION = 6;

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
 * `discovery.json` in a cache directory (`null`: nothing is read or kept,
 * the index lives for this process only). Read once, at the first use;
 * written by {@link DiscoveryCache.save} when it changed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { DiscoveryCache } from "./discovery_cache.ts";
 * import { Reporter } from "../tool/mod.ts";
 * const dir = await Deno.makeTempDir();
 * const file = `${dir}/a.ts`;
 * await Deno.writeTextFile(file, "export const a = 1;\n");
 * const cache = new DiscoveryCache(null, new Reporter({ quiet: true }));
 * const { key, pins } = await cache.check(file, "fingerprint");
 * assert.equal(cache.get(key), undefined);
 * cache.put(key, { module: file, tools: [], problems: [] });
 * assert.deepEqual(cache.get(key)?.tools, []);
 * assert.deepEqual(Object.keys(pins), [file]);
 * ```
 */
export class DiscoveryCache {
  readonly #dir: string | null;
  readonly #reporter: Reporter;
  #modules: Record<string, ModuleMeta> | undefined;
  #files: FileIndex | undefined;
  #dirty = false;
  /** Digests of fingerprints (many modules share one; the fingerprint holds config secrets). */
  #digests = new Map<string, string>();

  constructor(dir: string | null, reporter: Reporter) {
    this.#dir = dir;
    this.#reporter = reporter;
  }

  /** Files read and hashed (not served by size and mtime) since this cache was made, for tests. */
  get hashed(): number {
    return this.#load().files.hashed;
  }

  /** The cached report for a key, if any. */
  get(key: string): ModuleMeta | undefined {
    return key ? this.#load().modules[key] : undefined;
  }

  /** Remember a report: clean, or a failure of the module itself (see core/registry/_discovery.ts). */
  put(key: string, meta: ModuleMeta): void {
    if (!key) return;
    this.#load().modules[key] = meta;
    this.#dirty = true;
  }

  /**
   * A module's cached report and pins, at once (one `stat` per file of its
   * graph, no read), when none of its files changed; else undefined (then
   * {@link check} reads what it must).
   */
  hit(module: string, fingerprint: string): { meta: ModuleMeta; pins: Pins } | undefined {
    if (!module.startsWith("/")) return undefined; // packages: never cached
    const { files, modules } = this.#load();
    const pins = files.known(module);
    const meta = pins && modules[this.#key(module, fingerprint, pins)];
    return meta && pins ? { meta, pins } : undefined;
  }

  /**
   * The cache key and pins of a module: the SHA-256 of each file of its
   * local import graph (read and hashed only where changed) with the
   * fingerprint. A package's module (no file) has no key (`""`).
   */
  async check(module: string, fingerprint: string): Promise<{ key: string; pins: Pins }> {
    if (!module.startsWith("/")) return { key: "", pins: { [module]: "specifier" } };
    const pins = await this.#load().files.pins(module);
    return { key: this.#key(module, fingerprint, pins), pins };
  }

  /**
   * The local files `file` imports, as remembered while its size and mtime
   * are unchanged (core/plugins/plugin_files.ts checks a plugin's graph
   * without reading it); else undefined.
   */
  knownImports(file: string): readonly string[] | undefined {
    return this.#load().files.importsOf(file);
  }

  /** The bytes of `file` as this discovery read and hashed them, if it did. */
  bytes(file: string): Promise<{ bytes: Uint8Array; hash: string } | undefined> {
    return this.#load().files.bytes(file);
  }

  /** Write the cache if it changed; forget what this discovery read (later ones see edits). */
  async save(): Promise<void> {
    const { files, modules } = this.#load();
    const changed = this.#dirty || files.changed;
    files.reset();
    if (!this.#dir || !changed) return;
    this.#dirty = false;
    try {
      await Deno.mkdir(this.#dir, { recursive: true });
      const tmp = join(this.#dir, `discovery.${crypto.randomUUID()}.tmp`);
      await Deno.writeTextFile(
        tmp,
        JSON.stringify({ version: DISCOVERY_CACHE_VERSION, modules, files: this.#known }),
      );
      await Deno.rename(tmp, join(this.#dir, "discovery.json"));
    } catch (err) {
      this.#reporter.line(
        `Warning: cannot write the discovery cache: ${(err as Error).message}`,
        "yellow",
      );
    }
  }

  #known: Record<string, FileEntry> = {};

  /**
   * A module's key: the fingerprint's digest, the module and its pins (each
   * file's SHA-256) themselves. No hash of it: a start with many plugins
   * finds each one's report without hashing anything.
   */
  #key(module: string, fingerprint: string, pins: Pins): string {
    let digest = this.#digests.get(fingerprint);
    if (!digest) this.#digests.set(fingerprint, digest = sha256Hex(fingerprint));
    const files = Object.entries(pins).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
    return JSON.stringify([digest, module, files]);
  }

  /** Read once, at the first use (one file: sync avoids a thread-pool trip). */
  #load(): { files: FileIndex; modules: Record<string, ModuleMeta> } {
    if (this.#modules && this.#files) return { files: this.#files, modules: this.#modules };
    let modules: Record<string, ModuleMeta> = {};
    let known: Record<string, FileEntry> = {};
    if (this.#dir) {
      try {
        const data = JSON.parse(Deno.readTextFileSync(join(this.#dir, "discovery.json")));
        if (data && typeof data === "object" && data.version === DISCOVERY_CACHE_VERSION) {
          modules = data.modules ?? {};
          known = data.files ?? {};
        }
      } catch { /* no cache yet, or unreadable: start empty */ }
    }
    this.#known = known;
    this.#files = new FileIndex(known);
    this.#modules = modules;
    return { files: this.#files, modules };
  }
}
