/**
 * Discovery: import a toolset's modules inside a sandbox that holds the
 * toolset's ceiling grant, and bring back what they declare (names,
 * letters, schemas, load decisions). Tool code never runs in the host;
 * unchanged modules are served from the {@link DiscoveryCache}.
 *
 * @module
 */
import type { ChangeReport } from "../layers/change_report.ts";
import type { EgressRecord } from "../guard/egress.ts";
import { scrubText } from "../guard/redact.ts";
import type { ModuleMeta, SandboxEnv } from "../sandbox/protocol.ts";
import { pinGraph, type PinMemo } from "../sandbox/module_graph.ts";
import { Sandbox, type SandboxOptions } from "../sandbox/sandbox.ts";
import type { Reporter } from "../tool/reporter.ts";
import type { Grant } from "../tool/tool.ts";
import type { ToolsetSource } from "./catalog.ts";
import { DISCOVERY_CACHE_VERSION, DiscoveryCache } from "./discovery_cache.ts";
import { Batcher, batchKey } from "./discovery_batch.ts";
import { hostVars } from "./host_vars.ts";

/** Discovery sandboxes running at once (each is a process for plugins). */
/** Sources being discovered at once (cache look-ups: reading and hashing files). */
const _DISCOVERY_CONCURRENCY = 256;

const _SANDBOX_SLOTS = (() => {
  try {
    return Math.max(2, Math.min(8, navigator.hardwareConcurrency * 2));
  } catch {
    return 2;
  }
})();

/** What a {@link Discovery} needs. */
export interface DiscoveryOptions {
  /** The workspace (the sandboxes' current directory). */
  workspace: string;
  /** The discovery cache directory; `null`: no cache. */
  cacheDir: string | null;
  /** Where the sandboxes' own output goes. */
  reporter: Reporter;
  /** Secret values scrubbed from that output (shared, grows). */
  secrets: Set<string>;
  /** The namespace of a source's sandboxes, when they get one. */
  namespace?: (source: ToolsetSource, grant: Grant) => SandboxOptions["namespace"];
  /** Connections of discovery sandboxes (top-level code), for the audit log. */
  onConnection?: (toolset: string, record: EgressRecord) => void;
  /** What a plugin's top-level code wrote in the tree at discovery, for the audit log. */
  onChanges?: (toolset: string, report: ChangeReport) => void;
}

/**
 * Imports toolsets in sandboxes, at most a few sandboxes at once.
 *
 * @example
 * ```ts ignore
 * const discovery = new Discovery({ workspace, cacheDir: null, reporter, secrets: new Set() });
 * const metas = await discovery.discover(source, catalog.ceiling(source));
 * await discovery.save();
 * ```
 */
export class Discovery {
  /** How many modules were imported in a sandbox (cache misses), for tests. */
  imports = 0;
  /** How many discovery sandboxes were started (one per batch of plugins), for tests. */
  sandboxes = 0;
  readonly #options: DiscoveryOptions;
  readonly #cache: DiscoveryCache;
  #slotsFree = _SANDBOX_SLOTS;
  /** Files read and hashed for pins in this discovery (shared core files: once). */
  #pinMemo: PinMemo = new Map();
  #slotWaiters: Array<() => void> = [];

  readonly #batcher: Batcher;

  constructor(options: DiscoveryOptions) {
    this.#options = options;
    this.#cache = new DiscoveryCache(options.cacheDir, options.reporter);
    this.#batcher = new Batcher(async () => {
      await this.#slot();
      this.sandboxes++;
      return () => this.#release();
    }, {
      workspace: options.workspace,
      onLog: (text) =>
        options.reporter.line(`[discovery] ${scrubText(text, options.secrets)}`, "dim"),
      namespace: options.namespace,
    });
  }

  /**
   * Discover `sources` (`ceilings` their widest grants) and hand each to
   * `register` in the given order, so that "last registered wins" does not
   * depend on timing: unchanged ones straight from the cache, the others
   * discovered at once, {@link _DISCOVERY_CONCURRENCY} at a time.
   */
  async discoverInOrder(
    sources: ToolsetSource[],
    ceilings: Grant[],
    register: (source: ToolsetSource, metas: ModuleMeta[]) => void,
  ): Promise<void> {
    await this.prime(sources.map((source, i) => ({ source, ceiling: ceilings[i] })));
    const cached = sources.map((source, i) => this.cached(source, ceilings[i]));
    const found: Array<Promise<ModuleMeta[]> | undefined> = new Array(sources.length);
    let next = 0;
    const start = () => {
      while (next < sources.length && cached[next]) next++;
      if (next >= sources.length) return;
      const i = next++;
      found[i] = this.discover(sources[i], ceilings[i]);
      found[i]!.then(start, start);
    };
    for (let k = 0; k < _DISCOVERY_CONCURRENCY; k++) start();
    for (let i = 0; i < sources.length; i++) {
      if (cached[i]) {
        register(sources[i], cached[i]!);
        continue;
      }
      while (!found[i]) await Promise.race(found.filter(Boolean));
      register(sources[i], await found[i]!);
    }
  }

  /**
   * What each module of `source` declares, imported in a sandbox holding
   * `ceiling` (or from the cache). Never throws: a module that fails
   * carries its `error`.
   */
  async discover(source: ToolsetSource, ceiling: Grant): Promise<ModuleMeta[]> {
    const checked = this.#batcher.checking();
    try {
      return await this.#discover(source, ceiling, checked);
    } finally {
      checked();
    }
  }

  async #discover(
    source: ToolsetSource,
    ceiling: Grant,
    checked: () => void,
  ): Promise<ModuleMeta[]> {
    const { workspace, reporter, secrets } = this.#options;
    const fingerprint = _fingerprint(source, ceiling);
    const keys = new Map<string, string>();
    const found = new Map<string, ModuleMeta>();
    const computed = await Promise.all(
      source.modules.map((module) => this.#cache.key(module, fingerprint)),
    );
    // What runs later is what is checked now: the module files, pinned by hash
    // (remembered for files whose size and mtime did not change; a sandbox checks
    // its pins again before it starts).
    const local = source.modules.filter((m) => m.startsWith("/"));
    if (local.length) {
      const known = await Promise.all(local.map((m) => this.#cache.pinsOf(m, fingerprint)));
      if (known.every((p) => p !== undefined)) source.pins = Object.assign({}, ...known);
      else {
        const pins = source.pins = await pinGraph(local, this.#pinMemo);
        for (const m of local) await this.#cache.rememberPins(m, fingerprint, pins);
      }
    }
    // A package's module that is no file is pinned by Deno's lock file: its sandboxes get it.
    for (const m of source.modules) {
      if (!m.startsWith("/")) source.pins = { ...source.pins, [m]: "specifier" };
    }
    for (const [i, module] of source.modules.entries()) {
      const key = computed[i];
      keys.set(module, key);
      const hit = await this.#cache.get(key);
      if (hit) {
        found.set(module, _remembered(hit));
      }
    }
    const misses = source.modules.filter((m) => !found.has(m));
    if (misses.length) {
      this.imports += misses.length;
      const env: SandboxEnv = {
        workspace,
        grant: ceiling,
        config: source.config,
        vars: hostVars(source.policy),
      };
      const onLog = (text: string) =>
        reporter.line(`[${source.id}] ${scrubText(text, secrets)}`, "dim");
      // Alike plugins share one process, each in a worker of its own; the others (and
      // any plugin whose batch went wrong) get a sandbox of their own.
      const key = batchKey(source, ceiling, env);
      checked();
      const metas = (key !== undefined
        ? await this.#batcher.add(key, { source, ceiling, modules: misses, env, onLog })
        : undefined) ?? await this.#alone(source, ceiling, misses, env, onLog);
      for (const m of metas) {
        found.set(m.module, m);
        // Clean results, and failures of the module itself (a syntax error, an
        // import that hangs), are remembered; failures of the sandbox are retried.
        if (_cacheable(m)) {
          this.#cache.put(keys.get(m.module) ?? "", m);
        }
      }
    }
    return source.modules.map((module) =>
      found.get(module) ?? { module, tools: [], problems: [], error: "no answer from its sandbox" }
    );
  }

  /** Import `misses` of `source` in a sandbox of its own. */
  async #alone(
    source: ToolsetSource,
    ceiling: Grant,
    misses: string[],
    env: SandboxEnv,
    onLog: (text: string) => void,
  ): Promise<ModuleMeta[]> {
    await this.#slot();
    this.sandboxes++;
    const sb = new Sandbox({
      label: `${source.id}[discovery]`,
      grant: ceiling,
      modules: misses.filter((m) => m.startsWith("/")),
      policy: source.policy,
      imports: source.imports,
      workspace: this.#options.workspace,
      onLog,
      namespace: this.#options.namespace?.(source, ceiling),
      pins: source.pins,
      onConnection: (r) => this.#options.onConnection?.(source.id, r),
      onChanges: (report) => this.#options.onChanges?.(source.id, report),
    });
    try {
      await sb.prepare();
      return await sb.load(misses, env, source.policy.discovery_timeout_ms);
    } finally {
      await sb.close();
      this.#release();
    }
  }

  /** Load the cache for `sources` about to be discovered, so that {@link cached} can answer. */
  prime(sources: Array<{ source: ToolsetSource; ceiling: Grant }>): Promise<void> {
    return this.#cache.prime(sources.map(({ source, ceiling }) => _fingerprint(source, ceiling)));
  }

  /**
   * What `source` declares, straight from the cache when every module of it
   * is unchanged (no promise, no file read: a start with many plugins stays
   * fast), with its pins set; else undefined, and {@link discover} decides.
   */
  cached(source: ToolsetSource, ceiling: Grant): ModuleMeta[] | undefined {
    const fingerprint = _fingerprint(source, ceiling);
    const metas: ModuleMeta[] = [];
    const pins: Record<string, string> = {};
    for (const module of source.modules) {
      const hit = this.#cache.hit(module, fingerprint);
      if (!hit) return undefined;
      Object.assign(pins, hit.pins);
      metas.push(_remembered(hit.meta));
    }
    source.pins = pins;
    return metas;
  }

  /** Write the discovery cache if it changed. */
  save(): Promise<void> {
    // The next discovery (--watch, addSource) reads the files again: it sees edits.
    this.#pinMemo = new Map();
    return this.#cache.save();
  }

  #slot(): Promise<void> {
    if (this.#slotsFree > 0) {
      this.#slotsFree--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#slotWaiters.push(resolve));
  }

  #release(): void {
    const next = this.#slotWaiters.shift();
    if (next) next();
    else this.#slotsFree++;
  }
}

/** What the sandbox's report depends on besides the files: the grant, the config, the versions. */
function _fingerprint(source: ToolsetSource, ceiling: Grant): string {
  return JSON.stringify([
    DISCOVERY_CACHE_VERSION,
    Deno.version.deno,
    ceiling,
    source.config ?? null,
  ]);
}

/** A failure is remembered by content too: an unchanged broken file costs nothing. */
function _remembered(hit: ModuleMeta): ModuleMeta {
  return hit.error
    ? { ...hit, error: `${hit.error} (remembered: change the file to try again)` }
    : hit;
}

/** Whether a discovery result may be remembered: not a failure of the sandbox itself. */
function _cacheable(m: ModuleMeta): boolean {
  if (!m.error) return true;
  return !/sandbox (failed to start|exited unexpectedly|crashed|ran out of memory|was reset|hit its process limit|is closed|sent a malformed)|shutting down|no answer from/
    .test(m.error);
}
