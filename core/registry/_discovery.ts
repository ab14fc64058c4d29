/**
 * Discovery: import a toolset's modules inside a sandbox that holds the
 * toolset's ceiling grant, and bring back what they declare (names,
 * letters, schemas, load decisions). Tool code never runs in the host;
 * unchanged modules are served from the {@link DiscoveryCache}.
 *
 * Its work grows with the modules to import, never faster: each file is
 * read and hashed at most once (and not at all while its size and mtime
 * are unchanged), one `deno info` finds the npm packages of every sandbox,
 * and plugins that hold nothing are imported many to a process
 * (./_discovery_batch.ts), planned from their count once all are checked.
 * {@link Discovery.imports}, {@link Discovery.sandboxes} and
 * {@link Discovery.hashed} count it (tests/e2e/plugins/discovery_scale_test.ts).
 *
 * @module
 */
import type { ChangeReport } from "../layers/mod.ts";
import type { EgressRecord } from "../egress/mod.ts";
import { scrubText } from "../base/mod.ts";
import {
  DenoNeeds,
  type ModuleMeta,
  Sandbox,
  sandboxEntryFiles,
  type SandboxEnv,
  type SandboxOptions,
} from "../sandbox/mod.ts";
import type { Grant, Reporter } from "../tool/mod.ts";
import type { ToolsetSource } from "./catalog.ts";
import { DISCOVERY_CACHE_VERSION, DiscoveryCache } from "./discovery_cache.ts";
import { type BatchItem, batchKey, planBatches, runBatch } from "./_discovery_batch.ts";
import type { Progress } from "./_discovery_progress.ts";
import { hostVars } from "./host_vars.ts";

/** Sources checked at once (their files stat'ed, read and hashed where changed). */
const _CHECK_CONCURRENCY = 32;

/** Discovery sandboxes running at once (each is a process for plugins). */
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
  /** A progress line for a discovery that takes long (./_discovery_progress.ts); default none. */
  progress?: () => Progress;
  /** The cache, when already opened (else opened from `cacheDir`). */
  cache?: DiscoveryCache;
}

/** A source whose modules are not all in the cache: what it is to import, and where. */
/** What each job's modules declare, by the job's index, as its sandbox answers. */
type _Answers = Map<number, Promise<Map<string, ModuleMeta>>>;

/** A job's answer taken in: counted, cached where clean, by module. */
type _Settle = (job: _Job, metas: ModuleMeta[]) => Map<string, ModuleMeta>;

interface _Job {
  index: number;
  item: BatchItem;
  /** The cache key of each module. */
  keys: Map<string, string>;
  /** The batch it may join (./_discovery_batch.ts), or undefined: a sandbox of its own. */
  batch?: string;
}

/**
 * Imports toolsets in sandboxes, at most a few sandboxes at once.
 *
 * @example
 * ```ts ignore
 * const discovery = new Discovery({ workspace, cacheDir: null, reporter, secrets: new Set() });
 * await discovery.discoverInOrder([source], [catalog.ceiling(source)], register);
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
  #slotWaiters: Array<() => void> = [];
  /** What each discovery's sandboxes import (one `deno info` for them all). */
  #allNeeds: DenoNeeds[] = [];

  constructor(options: DiscoveryOptions) {
    this.#options = options;
    this.#cache = options.cache ?? new DiscoveryCache(options.cacheDir, options.reporter);
  }

  /** How many files were read and hashed (not served by size and mtime), for tests. */
  get hashed(): number {
    return this.#cache.hashed;
  }

  /** How many times `deno info` ran to find what discovery sandboxes import, for tests. */
  get infoRuns(): number {
    return this.#allNeeds.reduce((n, d) => n + d.runs, 0);
  }

  /**
   * Discover `sources` (`ceilings` their widest grants) and hand each to
   * `register` in the given order, so that "last registered wins" does not
   * depend on timing: unchanged ones straight from the cache, the others
   * checked, then imported in as few sandboxes as their grants allow.
   */
  async discoverInOrder(
    sources: ToolsetSource[],
    ceilings: Grant[],
    register: (source: ToolsetSource, metas: ModuleMeta[]) => void,
  ): Promise<void> {
    const answers: Array<ModuleMeta[] | Promise<ModuleMeta[]> | undefined> = sources.map((s, i) =>
      this.cached(s, ceilings[i])
    );
    const todo = sources.map((_, i) => i).filter((i) => answers[i] === undefined);
    // What their sandboxes import is found (one `deno info`) while their files are checked.
    const needs = todo.length
      ? await this.#needs(todo.map((i) => [sources[i], ceilings[i]]))
      : undefined;
    if (todo.length) {
      const found = new Map<number, Map<string, ModuleMeta>>();
      const jobs = (await _mapLimit(todo, _CHECK_CONCURRENCY, async (i) => {
        const { job, hits } = await this.#check(i, sources[i], ceilings[i]);
        found.set(i, hits);
        return job;
      })).filter((j): j is _Job => j !== undefined);
      const done = this.#run(jobs, needs!);
      for (const i of todo) {
        answers[i] = (done.get(i) ?? Promise.resolve(new Map<string, ModuleMeta>())).then(
          (metas) => {
            const hits = found.get(i)!;
            return sources[i].modules.map((module) =>
              hits.get(module) ?? metas.get(module) ??
                { module, tools: [], problems: [], error: "no answer from its sandbox" }
            );
          },
        );
      }
    }
    for (const [i, source] of sources.entries()) register(source, (await answers[i])!);
  }

  /**
   * What `source` declares, straight from the cache when every module of it
   * is unchanged (no promise, no file read: a start with many plugins stays
   * fast), with its pins set; else undefined.
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

  /**
   * What the sandboxes of `sources` will import: one `deno info` over their
   * modules and corral's entry points, started now when any of them runs in
   * the namespace (only there is a lean Deno cache made).
   */
  async #needs(sources: Array<[ToolsetSource, Grant]>): Promise<DenoNeeds> {
    const modules = sources.flatMap(([s]) => s.modules.filter((m) => m.startsWith("/")));
    const needs = new DenoNeeds([...(await sandboxEntryFiles().catch(() => [])), ...modules]);
    this.#allNeeds.push(needs);
    if (sources.some(([s, c]) => this.#options.namespace?.(s, c))) needs.start();
    return needs;
  }

  /** Write the discovery cache if it changed. */
  save(): Promise<void> {
    return this.#cache.save();
  }

  /**
   * Pin `source`'s files (read and hashed where changed) and look each
   * module up: the hits, and the job of importing the others.
   */
  async #check(
    index: number,
    source: ToolsetSource,
    ceiling: Grant,
  ): Promise<{ job?: _Job; hits: Map<string, ModuleMeta> }> {
    const fingerprint = _fingerprint(source, ceiling);
    const checked = await Promise.all(source.modules.map((m) => this.#cache.check(m, fingerprint)));
    // What runs later is what is checked now: the module files, pinned by hash. A package's
    // module that is no file is pinned by Deno's lock file: its sandboxes get it.
    source.pins = Object.assign({}, ...checked.map((c) => c.pins));
    const hits = new Map<string, ModuleMeta>();
    const keys = new Map<string, string>();
    for (const [i, module] of source.modules.entries()) {
      keys.set(module, checked[i].key);
      const hit = this.#cache.get(checked[i].key);
      if (hit) hits.set(module, _remembered(hit));
    }
    const misses = source.modules.filter((m) => !hits.has(m));
    if (!misses.length) return { hits };
    const { workspace, reporter, secrets } = this.#options;
    const env: SandboxEnv = {
      workspace,
      grant: ceiling,
      config: source.config,
      vars: hostVars(source.policy),
    };
    const onLog = (text: string) =>
      reporter.line(`[${source.id}] ${scrubText(text, secrets)}`, "dim");
    const item: BatchItem = { source, ceiling, modules: misses, env, onLog };
    return { job: { index, item, keys, batch: batchKey(source, ceiling, env) }, hits };
  }

  /**
   * Import what `jobs` miss: alike plugins in batches, the others alone, a
   * few sandboxes at once. Resolves each job's index to what its modules declare.
   */
  #run(jobs: _Job[], needs: DenoNeeds): _Answers {
    const out: _Answers = new Map();
    if (!jobs.length) return out;
    const share = { needs, bytes: (file: string) => this.#cache.bytes(file) };
    const { settle, progress } = this.#settler(jobs);
    const alone = (job: _Job) => this.#alone([job.item], share).then(([m]) => settle(job, m ?? []));
    const groups = new Map<string, _Job[]>();
    const own = new Map<string, _Job[]>();
    for (const job of jobs) {
      this.imports += job.item.modules.length;
      const builtin = _builtinKey(job.item);
      if (job.batch !== undefined) groups.set(job.batch, [...groups.get(job.batch) ?? [], job]);
      else if (builtin !== undefined) own.set(builtin, [...own.get(builtin) ?? [], job]);
      else out.set(job.index, alone(job));
    }
    for (const group of own.values()) this.#together(group, share, settle, out);
    for (const group of groups.values()) {
      const alike = group.map((j) => ({ ...j, source: j.item.source }));
      for (const batch of planBatches(alike, _SANDBOX_SLOTS)) {
        const answers = this.#batch(batch.map((j) => j.item), share);
        // A module the batch could not answer is imported again, alone.
        batch.forEach((job, k) => {
          out.set(job.index, answers.then((a) => a[k] ? settle(job, a[k]!) : alone(job)));
        });
      }
    }
    const all = [...out.values()];
    if (progress) void Promise.allSettled(all).then(() => progress.end());
    return out;
  }

  /**
   * What becomes of a job's answer: counted on the progress line (started
   * here for all of `jobs`), what its modules declare by module, and the
   * answers worth keeping put in the cache.
   */
  #settler(jobs: _Job[]): { settle: _Settle; progress: Progress | undefined } {
    const progress = this.#options.progress?.();
    const total = jobs.reduce((n, j) => n + j.item.modules.length, 0);
    let done = 0;
    progress?.update(0, total);
    const settle = (job: _Job, metas: ModuleMeta[]) => {
      progress?.update(done += job.item.modules.length, total);
      const map = new Map<string, ModuleMeta>();
      for (const m of metas) {
        map.set(m.module, m);
        // Clean results, and failures of the module itself (a syntax error, an
        // import that hangs), are remembered; failures of the sandbox are retried.
        if (_cacheable(m)) this.#cache.put(job.keys.get(m.module) ?? "", m);
      }
      return map;
    };
    return { settle, progress };
  }

  /** corral's own toolsets: one process, holding only the commands their load checks use. */
  #together(
    group: _Job[],
    share: SandboxOptions["discovery"],
    settle: _Settle,
    out: _Answers,
  ): void {
    const narrow = (g: Grant): Grant => ({ ...g, read: [], write: [], net: [] });
    const items = group.map((j) => ({
      ...j.item,
      env: { ...j.item.env, grant: narrow(j.item.ceiling) },
    }));
    const run = [...new Set(group.flatMap((j) => j.item.ceiling.run))];
    // One process starts for them all: each import may take the longest of their limits.
    const limit = Math.max(...group.map((j) => j.item.source.policy.discovery_timeout_ms));
    const answers = this.#alone(items, share, { ...narrow(items[0].ceiling), run }, limit);
    group.forEach((job, k) => out.set(job.index, answers.then((a) => settle(job, a[k] ?? []))));
  }

  /** Import `items` in one process sandbox, each in a worker of its own. */
  async #batch(
    items: BatchItem[],
    share: SandboxOptions["discovery"],
  ): Promise<Array<ModuleMeta[] | undefined>> {
    await this.#slot();
    this.sandboxes++;
    try {
      return await runBatch(items, {
        workspace: this.#options.workspace,
        onLog: (text) =>
          this.#options.reporter.line(
            `[discovery] ${scrubText(text, this.#options.secrets)}`,
            "dim",
          ),
        namespace: this.#options.namespace,
        discovery: share,
      });
    } finally {
      this.#release();
    }
  }

  /**
   * Import `items`' modules in a sandbox of their own, in its realm, each
   * with its own environment: one toolset, or corral's own toolsets
   * together (holding `grant`, see {@link _builtinKey}).
   */
  async #alone(
    items: BatchItem[],
    share: SandboxOptions["discovery"],
    grant = items[0].ceiling,
    timeoutMs?: number,
  ): Promise<ModuleMeta[][]> {
    const { source, onLog } = items[0];
    await this.#slot();
    this.sandboxes++;
    const sb = new Sandbox({
      label: `${items.length > 1 ? "built-in toolsets" : source.id}[discovery]`,
      grant,
      modules: items.flatMap((i) => i.modules.filter((m) => m.startsWith("/"))),
      policy: source.policy,
      imports: source.imports,
      workspace: this.#options.workspace,
      onLog,
      namespace: this.#options.namespace?.(source, grant),
      pins: Object.assign({}, ...items.map((i) => i.source.pins ?? {})),
      onConnection: (r) => this.#options.onConnection?.(source.id, r),
      onChanges: (report) => this.#options.onChanges?.(source.id, report),
      ...(share ? { discovery: share } : {}),
    });
    try {
      await sb.prepare();
      return await sb.load(items.map((i) => ({
        modules: i.modules,
        env: i.env,
        timeoutMs: timeoutMs ?? i.source.policy.discovery_timeout_ms,
      })));
    } finally {
      await sb.close();
      this.#release();
    }
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

/** `fn` over `items`, at most `limit` at once; results keep the order. */
async function _mapLimit<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
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

/** What the sandbox's report depends on besides the files: the grant, the config, the versions. */
function _fingerprint(source: ToolsetSource, ceiling: Grant): string {
  return JSON.stringify([
    DISCOVERY_CACHE_VERSION,
    Deno.version.deno,
    ceiling,
    source.config ?? null,
  ]);
}

/**
 * The group corral's own toolsets are discovered in, or undefined. They are
 * the trust base (never a plugin): the built-ins of one process policy are
 * imported in one sandbox, in its realm, holding none of their files or
 * hosts, only the commands their load checks look for (`bash`, `python3`);
 * none of them reads, writes or connects at import. Their calls still run
 * in sandboxes of their own grants.
 */
function _builtinKey(item: BatchItem): string | undefined {
  const p = item.source.policy;
  if (item.source.kind !== "builtin" || p.isolation !== "process" || p.fallback) return undefined;
  return JSON.stringify([
    p.memory_mb,
    p.max_processes,
    p.max_output_bytes,
    p.max_read_bytes,
    p.limits ?? "",
    p.jail ?? "",
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
  return !/sandbox (failed to start|exited unexpectedly|crashed|ran out of memory|was reset|hit its process limit|is closed|sent a malformed)|shutting down|no answer from|" not started: /
    .test(m.error);
}
