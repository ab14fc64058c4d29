/**
 * A discovery sandbox's Deno cache. A sandbox that imports its modules once
 * to hear what they declare needs no module set's own cache
 * (./emit_cache.ts: three `deno` runs and a hard link per npm file, about a
 * second of CPU on a busy machine, for every set). It gets the npm packages
 * its graph imports, bound read-only from the host's cache one folder each,
 * and corral's lock narrowed to them; Deno compiles its code in memory.
 *
 * - A sandbox that holds nothing (a batch of plugins, each in a worker
 *   reading only its own files): its `DENO_DIR` is a folder of its
 *   namespace's own `/tmp`, written by its Deno alone (no tool code may
 *   write anything there, no subprocess runs). The compiled code of
 *   corral's runtime and zod is cached there by the first worker and used
 *   by the next ones, and is gone with the namespace.
 * - Any other: an empty read-only folder of the code store, with Deno's
 *   emit cache off (`DENO_EMIT_CACHE_MODE=disable`): nothing of its cache
 *   can be written, so no tool code and no subprocess can change what the
 *   runtime imports next.
 *
 * A graph that imports remote or `jsr:` modules keeps the full own cache.
 *
 * @module
 */
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { INSTALL_DIR } from "../config/mod.ts";
import { isWithin } from "../jail/mod.ts";
import { pathExists, sha256Hex } from "../base/mod.ts";
import { type DenoInfo, denoInfo, type DenoLock, narrowLock } from "./emit_cache.ts";

/** `DENO_DIR` of a sandbox that holds nothing: on its namespace's own `/tmp`. */
export const SCRATCH_DENO_DIR = "/tmp/corral-deno";

/** What one `deno info` found: each module's dependencies, npm packages, redirects. */
interface _Graph {
  deps: Map<string, string[]>;
  npm: Map<string, string>;
  kinds: Map<string, string>;
  redirects: Record<string, string>;
  packages: NonNullable<DenoInfo["npmPackages"]>;
}

/**
 * The npm packages module sets need, found by one `deno info` over the
 * modules a discovery will import, started as soon as they are known (a
 * file that graph did not reach costs one more run).
 *
 * @example
 * ```ts ignore
 * const needs = new DenoNeeds(modules);
 * needs.start();
 * const packages = await needs.packagesOf(["/p/a.ts"], denoDir); // lock key → host folder
 * ```
 */
export class DenoNeeds {
  /** Runs of `deno info`, for tests. */
  runs = 0;
  readonly #roots: string[];
  readonly #asked = new Set<string>();
  #graphs: Array<Promise<_Graph>> = [];

  /** `roots`: the modules the discovery will import (their graphs are followed). */
  constructor(roots: Iterable<string> = []) {
    this.#roots = [...new Set(roots)];
  }

  /** Run `deno info` over the roots now (once), while the discovery does other work. */
  start(): void {
    if (this.#graphs.length || !this.#roots.length) return;
    this.#run(this.#roots);
  }

  #run(roots: string[]): void {
    for (const f of roots) this.#asked.add(f);
    this.runs++;
    this.#graphs.push(_graph(roots));
  }

  /**
   * The npm packages `files` import (with their dependencies) as lock keys
   * with their folders in the host's cache `shared`, or undefined when the
   * graph needs more than packages (remote or `jsr:` modules) or a folder
   * is not in that cache.
   */
  async packagesOf(files: string[], shared: string): Promise<Map<string, string> | undefined> {
    this.start();
    let graphs = await Promise.all(this.#graphs);
    const reached = (f: string) => graphs.some((g) => g.kinds.has(pathToFileURL(f).href));
    const missing = files.filter((f) => !this.#asked.has(f) && !reached(f));
    if (missing.length) {
      this.#run(missing);
      graphs = await Promise.all(this.#graphs);
    }
    const keys = new Set<string>();
    const seen = new Set<string>();
    const queue = files.map((f) => pathToFileURL(f).href);
    while (queue.length) {
      let spec = queue.pop()!;
      for (let i = 0; i < 10 && graphs.some((g) => g.redirects[spec]); i++) {
        spec = graphs.find((g) => g.redirects[spec])!.redirects[spec];
      }
      if (seen.has(spec)) continue;
      seen.add(spec);
      if (spec.startsWith("node:")) continue;
      const g = graphs.find((g) => g.kinds.has(spec));
      if (!g) {
        if (spec.startsWith("file:") || spec.startsWith("npm:")) continue; // unresolved: Deno says
        return undefined;
      }
      const npm = g.npm.get(spec);
      if (npm) keys.add(npm);
      else if (spec.startsWith("file:")) queue.push(...g.deps.get(spec) ?? []);
      else return undefined;
    }
    const packages = Object.assign({}, ...graphs.map((g) => g.packages));
    const out = new Map<string, string>();
    const todo = [...keys];
    while (todo.length) {
      const key = todo.pop()!;
      if (out.has(key)) continue;
      const p = packages[key];
      if (!p?.localPath || !isWithin(p.localPath, shared)) return undefined;
      out.set(key, p.localPath);
      todo.push(...p.dependencies ?? []);
    }
    return out;
  }
}

async function _graph(roots: string[]): Promise<_Graph> {
  const dir = await Deno.makeTempDir({ prefix: "corral_info_" });
  try {
    const root = join(dir, "root.ts");
    const lines = roots.map((f) => `import ${JSON.stringify(pathToFileURL(f).href)};\n`);
    await Deno.writeTextFile(root, lines.join(""));
    const info = await denoInfo(root);
    const g: _Graph = {
      deps: new Map(),
      npm: new Map(),
      kinds: new Map(),
      redirects: info.redirects ?? {},
      packages: info.npmPackages ?? {},
    };
    for (const m of info.modules ?? []) {
      g.kinds.set(m.specifier, m.kind ?? "");
      if (m.npmPackage) g.npm.set(m.specifier, m.npmPackage);
      const deps = (m.dependencies ?? []).map((d) => d.code?.specifier).filter((s) => s);
      g.deps.set(m.specifier, deps as string[]);
    }
    return g;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** A discovery sandbox's Deno cache: where, what is bound into it, its lock. */
export interface LeanDenoDir {
  /** `DENO_DIR` inside the namespace. */
  denoDir: string;
  /** Whether it is the namespace's own (in its `/tmp`, never bound from the host). */
  scratch: boolean;
  /** `[host folder, folder inside]` of each npm package, bound read-only. */
  binds: Array<[from: string, to: string]>;
  /** corral's lock narrowed to the packages (a file of the code store). */
  lock: string;
  /** Environment the runtime needs with it. */
  env: Record<string, string>;
}

let _lock: Promise<DenoLock> | undefined;

/**
 * The Deno cache of a discovery sandbox importing `packages` (from
 * {@link DenoNeeds.packagesOf}, folders of `shared`): its namespace's own
 * (`writable`: the sandbox holds nothing) or a read-only folder of `store`.
 */
export async function leanDenoDir(
  packages: Map<string, string>,
  shared: string,
  store: string,
  writable: boolean,
): Promise<LeanDenoDir> {
  const keys = new Set(packages.keys());
  const lock = narrowLock(await (_lock ??= _corralLock()), keys, new Set());
  const text = JSON.stringify(lock);
  const digest = sha256Hex(text).slice(0, 32);
  const base = join(store, "lean");
  await Deno.mkdir(base, { recursive: true, mode: 0o700 });
  const lockFile = join(base, `${digest}.lock`);
  if (!pathExists(lockFile)) await _writeOnce(lockFile, text);
  const denoDir = writable ? SCRATCH_DENO_DIR : join(base, digest);
  const binds: Array<[string, string]> = [...packages.values()].sort().map((
    from,
  ) => [from, join(denoDir, relative(shared, from))]);
  // A read-only folder needs its mount points: made once, empty.
  if (!writable) {
    for (const [, to] of binds) await Deno.mkdir(to, { recursive: true, mode: 0o700 });
  }
  return {
    denoDir,
    scratch: writable,
    binds,
    lock: lockFile,
    env: writable ? {} : { DENO_EMIT_CACHE_MODE: "disable" },
  };
}

async function _corralLock(): Promise<DenoLock> {
  try {
    return JSON.parse(await Deno.readTextFile(join(INSTALL_DIR, "deno.lock"))) as DenoLock;
  } catch {
    return {};
  }
}

async function _writeOnce(file: string, text: string): Promise<void> {
  const tmp = `${file}.${crypto.randomUUID()}.tmp`;
  await Deno.writeTextFile(tmp, text, { mode: 0o444 });
  await Deno.rename(tmp, file).catch(() => Deno.remove(tmp).catch(() => {}));
}
