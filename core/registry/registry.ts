/**
 * The registry: corral's library API, and what the CLI and the MCP server
 * stand on. It puts three parts together:
 *
 * - discovery (./_discovery.ts) imports each toolset in a sandbox holding
 *   the toolset's ceiling grant, with a cache of unchanged modules;
 * - the catalog (./catalog.ts) decides which tools exist, with which grant
 *   and status (gating, jail, collisions, overrides);
 * - the call runner (./_call_runner.ts) runs one call: confirmation, the
 *   sandbox of its grant, limits, audit and cleaning of the result.
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { loadPolicy, type Policy, type TrustedPath } from "../config/mod.ts";
import { AuditLog } from "../audit/mod.ts";
import { findBwrap, probeLimits, runtimeFiles } from "../jail/mod.ts";
import { secretValues } from "../base/mod.ts";
import {
  type HostPrivileges,
  hostPrivileges,
  type ModuleMeta,
  prepareSealedRuntime,
  processSandboxMissing,
  type Sandbox,
  sandboxEntryFiles,
} from "../sandbox/mod.ts";
import { hostFallback } from "./host_fallback.ts";
import { Reporter, type SchemaFormat, type ToolResult } from "../tool/mod.ts";
import {
  builtinSource,
  builtinToolsets,
  reservedToolNames,
  startingBuiltins,
} from "./builtin_toolsets.ts";
import { CallRunner, type RegistryCallOptions } from "./_call_runner.ts";
import { Catalog, type LoadProblem, type ToolInfo, type ToolsetSource } from "./catalog.ts";
import { Discovery } from "./_discovery.ts";
import { progressLine } from "./_discovery_progress.ts";
import { defaultCacheDir } from "./discovery_cache.ts";
import { pluginRoots } from "./grant_paths.ts";
import { checkSourceTrust, sandboxNamespace } from "./_sandbox_namespace.ts";
import { HostedServers } from "../hosted/mod.ts";
import { serverMetas, serverSource } from "./_server_toolsets.ts";
import type { RegistryOptions } from "./_registry_options.ts";
import { type RegistryFolders, registryFolders, secondWall } from "./registry_folders.ts";
import type { SecondWall } from "../seccomp/mod.ts";
import type { SandboxPool } from "./sandbox_pool.ts";

export type { LoadProblem, SourceKind, ToolInfo, ToolsetSource, ToolStatus } from "./catalog.ts";
export type { RegistryCallOptions } from "./_call_runner.ts";
export type { RegistryOptions } from "./_registry_options.ts";

/**
 * The catalog of tools and the way to call them.
 *
 * @example
 * ```ts ignore
 * import { Registry } from "./registry.ts";
 * const registry = await Registry.create({ privileges: "r" });
 * console.log(registry.list().map((t) => `${t.name} ${t.status}`));
 * const result = await registry.call("WordCount", { filepath: "README.md" });
 * await registry.close();
 * ```
 */
export class Registry {
  // Set once, by create(): the registry is built from its options, in #open.
  workspace!: string;
  policy!: Policy;
  host!: HostPrivileges;
  reporter!: Reporter;
  /** Modules that failed to load. */
  problems!: LoadProblem[];
  /** Collisions, dropped tools and policy typos, as reported. */
  warnings!: string[];
  #catalog!: Catalog;
  #discovery!: Discovery;
  #runner!: CallRunner;
  /** Secret values of config sections, scrubbed from every text shown. */
  readonly #secrets = new Set<string>();

  /** What no tool may change (and, for secrets, read). */
  trusted!: TrustedPath[];
  /** The hosted MCP servers (core/hosted/). */
  hosted!: HostedServers;
  /** Called when the tools on offer changed at run time (a hosted server's approval state). */
  onToolsChanged?: () => void;
  #options: RegistryOptions;

  /** The registry of `options`, built by {@link Registry.create}. */
  private constructor(options: RegistryOptions) {
    this.#options = options;
  }

  /** Its parts, from what {@link Registry.create} found. */
  #build(
    workspace: string,
    policy: Policy,
    host: HostPrivileges,
    bwrap: string | undefined,
    cacheDir: string | null,
    wall: SecondWall,
  ): void {
    const options = this.#options;
    this.workspace = workspace;
    this.policy = policy;
    this.host = host;
    const reporter = this.reporter = options.reporter ?? new Reporter();
    const secrets = this.#secrets;
    this.#catalog = new Catalog({ ...options, workspace, host, bwrap, wall, reporter, secrets });
    this.problems = this.#catalog.problems;
    this.warnings = this.#catalog.warnings;
    const folders = registryFolders(options, policy, cacheDir, workspace);
    this.trusted = folders.trusted;
    const namespace = sandboxNamespace(this.#catalog, folders.trusted, bwrap, policy, workspace, {
      runDir: folders.runDir,
    });
    this.#discovery = this.#newDiscovery(cacheDir, namespace);
    const { auditPath } = folders;
    const audit = auditPath ? new AuditLog(auditPath, options.auditLimits) : undefined;
    this.hosted = this.#newHosted(folders, namespace, audit);
    this.#runner = this.#newRunner(namespace, audit);
  }

  /** Discovery: each toolset imported in a sandbox of its ceiling grant (./_discovery.ts). */
  #newDiscovery(cacheDir: string | null, namespace: _Namespace): Discovery {
    const options = this.#options;
    return new Discovery({
      workspace: this.workspace,
      cacheDir,
      reporter: this.reporter,
      secrets: this.#secrets,
      namespace,
      // Top-level code of a plugin runs at discovery: its connections are audited too.
      onConnection: (id, r) => this.#runner.auditConnection(id, r),
      onChanges: (id, report) => this.#runner.auditChanges(id, report),
      ...(options.discoveryProgress ? { progress: () => progressLine() } : {}),
      ...(options.discoveryCache ? { cache: options.discoveryCache } : {}),
    });
  }

  /** The hosted MCP servers (core/hosted/), in namespaces of their own grants. */
  #newHosted(
    folders: RegistryFolders,
    namespace: _Namespace,
    audit: AuditLog | undefined,
  ): HostedServers {
    return new HostedServers(this.#options.servers ?? [], {
      workspace: this.workspace,
      host: this.host,
      secrets: this.#secrets,
      namespace: (e, p, g) => namespace(serverSource(e, p), g),
      audit,
      reporter: this.reporter,
      onConnection: (server, r) => this.#runner.auditConnection(server, r),
      onChanged: (server) => this.#loadServer(server),
      approvalsDir: folders.approvals,
      serversDir: folders.installs,
    });
  }

  /** The call runner: every call, a hosted server's too (./_call_runner.ts). */
  #newRunner(namespace: _Namespace, audit: AuditLog | undefined): CallRunner {
    const options = this.#options;
    return new CallRunner({
      workspace: this.workspace,
      policy: this.policy,
      catalog: this.#catalog,
      reporter: this.reporter,
      secrets: this.#secrets,
      audit,
      auditOptional: options.auditOptional,
      sandboxLimits: options.sandboxLimits,
      hold: options.hold,
      namespace,
      hosted: (name, args, call) => this.hosted.call(name, args, call),
    });
  }

  /** Register (again) a hosted server's tools from its records; nothing is started. */
  #loadServer(name: string): void {
    const entry = this.hosted.entry(name)!;
    const source = serverSource(entry, this.policy.server(name));
    this.#checkTrust([source], this.#catalog.sources());
    const metas = serverMetas(this.#catalog, this.hosted, source, entry, this.#reserved);
    this.#register(source, metas);
    this.onToolsChanged?.();
  }

  #reserved = new Map<string, string>();

  /** Refuse a source whose write grant overlaps the trust base (./_sandbox_namespace.ts). */
  #checkTrust(sources: ToolsetSource[], all: ToolsetSource[]): void {
    // The trust base once for all of them: a start with many plugins stays linear.
    const trusted = [...this.trusted, ...pluginRoots(all)];
    for (const s of sources) checkSourceTrust(s, trusted, this.host, this.#catalog);
  }

  /** Build the catalog: autoloaded built-ins, requested toolsets, then other sources. */
  static async create(options: RegistryOptions = {}): Promise<Registry> {
    const registry = new Registry(options);
    await registry.#open();
    return registry;
  }

  async #open(): Promise<void> {
    let options = this.#options;
    const workspace = Deno.realPathSync(resolve(options.workspace ?? Deno.cwd()));
    const policy = options.policy ??
      await loadPolicy({ file: options.policyFile, workspace });
    const host = options.host ?? hostPrivileges(options.privileges ?? "rwxn");
    const cacheDir = options.cacheDir === undefined
      ? defaultCacheDir()
      : options.cacheDir && resolve(options.cacheDir);
    const bwrap = options.bwrap === undefined
      ? await findBwrap({ cacheFile: cacheDir ? join(cacheDir, "bwrap.json") : undefined })
      : options.bwrap ?? undefined;
    // Probes and the sandbox's entry files (a `deno info` on a cold cache) while the second
    // wall's filters are made or checked (core/seccomp/: python3 on a cold cache); none without bwrap.
    _warmUp(bwrap, cacheDir);
    const wall = await secondWall(bwrap, policy, options.seccomp);
    options = this.#options = {
      ...options,
      reserved: options.reserved ?? await reservedToolNames(),
    };
    this.#build(workspace, policy, host, bwrap, cacheDir, wall);
    await _makeFolders(options.auditPath, cacheDir);
    // A host whose flags forbid process sandboxes runs its toolsets in workers (host_fallback.ts).
    const fallback = processSandboxMissing();
    const plugins = (options.sources ?? []).map((s) => hostFallback(s, fallback));
    const builtins = options.noBuiltins
      ? []
      : (await startingBuiltins(policy, options.toolsets ?? [], (w) => this.#catalog.warn(w)))
        .map((b) => hostFallback(b, fallback));
    this.#checkTrust([...builtins, ...plugins], plugins);
    // At once, built-ins and plugins: registration keeps their order.
    await this.#loadSources([...builtins, ...plugins]);
    this.#reserved = options.reserved!;
    for (const e of options.servers ?? []) this.#loadServer(e.name);
    await this.#discovery.save();
    this.#warnUnmatched(policy);
  }

  /** A `tools.NAME` rule of the policy that names no loaded tool: a warning (a typo, often). */
  #warnUnmatched(policy: Policy): void {
    const catalog = this.#catalog;
    for (const name of policy.toolNames()) {
      if (!catalog.entries().some((e) => e.info.name === name)) {
        catalog.warn(
          `Warning: ${policy.origin(`tools.${name}`)}: tools.${name}: no loaded tool has that name`,
        );
      }
    }
  }

  /** How many modules were imported in a sandbox (cache misses), for tests. */
  get imports(): number {
    return this.#discovery.imports;
  }

  /** Discovery's work so far, counted (./_discovery.ts): for tests, never timed. */
  get discoveryStats(): { imports: number; sandboxes: number; hashed: number; infoRuns: number } {
    const d = this.#discovery;
    return { imports: d.imports, sandboxes: d.sandboxes, hashed: d.hashed, infoRuns: d.infoRuns };
  }

  /** Add an on-demand built-in toolset at run time (e.g. `"net"`). */
  async addToolset(name: string): Promise<ToolInfo[]> {
    const declared = await builtinToolsets();
    if (!(name in declared)) {
      throw new TypeError(
        `Unknown toolset "${name}" (built-in toolsets: ${Object.keys(declared).join(", ")})`,
      );
    }
    if (this.#catalog.has(name)) return this.list().filter((t) => t.toolset === name);
    const source = hostFallback(await builtinSource(name, this.policy), processSandboxMissing());
    this.#checkTrust([source], this.#catalog.sources());
    await this.#loadSource(source);
    await this.#discovery.save();
    return this.list().filter((t) => t.toolset === name);
  }

  /** Add a toolset source (plugin or package) at run time. */
  async addSource(source: ToolsetSource): Promise<ToolInfo[]> {
    source = hostFallback(source, processSandboxMissing());
    this.#checkTrust([source], [...this.#catalog.sources(), source]);
    await this.#loadSource(source);
    await this.#discovery.save();
    return this.list().filter((t) => t.toolset === source.id);
  }

  /**
   * Replace the toolsets `remove` by `sources` in one step (`--watch`: from
   * the first changed plugin on, every later one again, in load order): the
   * new ones are discovered first, then the catalog goes from the old set to
   * the new at once, so that no call ever sees a state in between (a later
   * plugin's tool briefly overridden by an earlier one). The sandboxes of
   * `stale` toolsets (changed or gone) stop afterwards.
   */
  async replaceSources(
    remove: string[],
    sources: ToolsetSource[],
    stale: string[],
  ): Promise<void> {
    sources = sources.map((s) => hostFallback(s, processSandboxMissing()));
    const kept = this.#catalog.sources().filter((s) => !remove.includes(s.id));
    this.#checkTrust(sources, [...kept, ...sources]);
    for (const source of sources) {
      for (const v of secretValues(source.config)) this.#secrets.add(v);
    }
    const found: Array<[ToolsetSource, ModuleMeta[]]> = [];
    await this.#discovery.discoverInOrder(
      sources,
      sources.map((source) => this.#catalog.ceiling(source)),
      (source, metas) => found.push([source, metas]),
    );
    for (const id of remove) this.#catalog.remove(id);
    for (const [source, metas] of found) this.#register(source, metas);
    await this.#discovery.save();
    for (const id of stale) await this.#runner.closeToolset(id);
  }

  /** Remove a toolset (e.g. a deleted plugin file); its sandboxes stop. */
  async removeSource(id: string): Promise<void> {
    this.#catalog.remove(id);
    await this.#runner.closeToolset(id);
  }

  /** The toolset sources loaded now, in load order. */
  sources(): ToolsetSource[] {
    return this.#catalog.sources();
  }

  /** Every tool, loaded or not, in load order. */
  list(): ToolInfo[] {
    return this.#catalog.list();
  }

  /** The loaded tools only. */
  loaded(): ToolInfo[] {
    return this.#catalog.loaded();
  }

  /** The tool that a call by this name runs, if any. */
  get(name: string): ToolInfo | undefined {
    return this.#catalog.entry(name)?.info;
  }

  /** The permission letters a tool declares (`""` for none). Throws for unknown names. */
  permissionsOf(name: string): string {
    return this.#catalog.permissionsOf(name);
  }

  /** Schemas of the loaded tools in one format. */
  schemas(format: SchemaFormat = "openai"): unknown[] {
    return this.#catalog.schemas(format);
  }

  /** The names closest to `name`, for "did you mean". */
  closest(name: string, count = 3): string[] {
    return this.#catalog.closest(name, count);
  }

  /** `Unknown tool "X" (did you mean: A?)`, or why X's plugin file did not load (full paths: `hostPaths`). */
  unknownToolMessage(name: string, hostPaths = false): string {
    return this.#catalog.unknownToolMessage(name, hostPaths);
  }

  /**
   * Call a tool in its sandbox. Unknown names throw a `TypeError`; every
   * other outcome is a {@link ToolResult}.
   */
  call(name: string, args: unknown, options: RegistryCallOptions = {}): Promise<ToolResult> {
    return this.#runner.call(name, args, options);
  }

  /** Audit a call refused before it reached the registry: one `denied` line (./_call_runner.ts). */
  auditRefusal(
    name: string,
    args: unknown,
    options: RegistryCallOptions,
    reason: string,
    message: string,
  ): Promise<void> {
    return this.#runner.auditRefusal(name, args, options, reason, message);
  }

  /** The sandbox a principal's calls of a tool run in (shared by tools of a toolset with equal letters). */
  sandboxFor(name: string, principal?: string): Promise<Sandbox> {
    return this.#runner.sandboxFor(name, principal);
  }

  /** The live call sandboxes of every principal: their limits and count (./sandbox_pool.ts). */
  get sandboxes(): SandboxPool {
    return this.#runner.pool;
  }

  /** A principal ended (its MCP session closed): its sandboxes close, with all they started. */
  async endPrincipal(principal: string): Promise<void> {
    await Promise.all([
      this.hosted.closeSession(principal),
      this.#runner.closePrincipal(principal),
    ]);
  }

  /** Stop every sandbox and hosted server; resolves once they have ended and released all. */
  async close(): Promise<void> {
    await Promise.all([this.hosted.close(), this.#runner.close()]);
  }

  /** Load sources in order (./_discovery.ts `discoverInOrder`: at once, registered in order). */
  async #loadSources(sources: ToolsetSource[]): Promise<void> {
    for (const source of sources) {
      for (const s of secretValues(source.config)) this.#secrets.add(s);
    }
    const ceilings = sources.map((source) => this.#catalog.ceiling(source));
    await this.#discovery.discoverInOrder(
      sources,
      ceilings,
      (s, metas) => this.#register(s, metas),
    );
  }

  #loadSource(source: ToolsetSource): Promise<void> {
    return this.#loadSources([source]);
  }

  /** Register a source; one that cannot be registered is a load problem, never a failed start. */
  #register(source: ToolsetSource, metas: ModuleMeta[]): void {
    try {
      this.#catalog.register(source, metas);
    } catch (err) {
      this.problems.push({
        toolset: source.id,
        source: source.modules[0] ?? source.id,
        message: `Cannot load toolset "${source.id}": ${(err as Error).message}`,
      });
    }
  }
}

/** The namespace of a source's sandboxes, when they get one (./_sandbox_namespace.ts). */
type _Namespace = ReturnType<typeof sandboxNamespace>;

/** What the first process sandbox will need, found while the catalog is built. */
function _warmUp(bwrap: string | undefined, cacheDir: string | null): void {
  void probeLimits();
  const libs = cacheDir ? join(cacheDir, "runtime_libs.json") : undefined;
  if (bwrap) runtimeFiles(libs).then((rt) => prepareSealedRuntime(rt.exec)).catch(() => {});
  sandboxEntryFiles().catch(() => {});
}

/**
 * The audit log exists from the start, so that the namespace can keep it
 * out of reach; the cache folder too.
 */
async function _makeFolders(auditPath: string | undefined, cacheDir: string | null): Promise<void> {
  if (auditPath) {
    await Deno.mkdir(dirname(resolve(auditPath)), { recursive: true }).catch(() => {});
    await Deno.writeFile(resolve(auditPath), new Uint8Array(), { append: true }).catch(() => {});
  }
  if (cacheDir) await Deno.mkdir(cacheDir, { recursive: true }).catch(() => {});
}
