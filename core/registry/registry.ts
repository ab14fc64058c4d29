/**
 * The registry: discovers toolsets (always inside a sandbox), gates tools
 * by their effective grant, exports schemas, and runs calls in per-letter
 * sandboxes. The CLI and the MCP server are thin layers over it; it is also
 * the library API for embedding corral in a TypeScript agent.
 *
 * @module
 */
import { basename, join, relative, resolve } from "node:path";
import { ConfigError } from "../tool/errors.ts";
import {
  ceilingGrant,
  effectiveGrant,
  type HostPrivileges,
  hostPrivileges,
} from "../sandbox/grant.ts";
import { localModuleGraph } from "../plugins/module_graph.ts";
import { loadPolicy, type Policy, type SandboxPolicy } from "../config/policy.ts";
import type { ModuleMeta, SandboxEnv, ToolMeta } from "../sandbox/protocol.ts";
import { Reporter } from "../tool/reporter.ts";
import { failure, type ToolResult } from "../tool/result.ts";
import { Sandbox } from "../sandbox/sandbox.ts";
import { AuditLog, digestArgs, outcomeOf } from "../guard/audit.ts";
import { decideJail, findBwrap, type JailStatus } from "../guard/jail.ts";
import { hideHostPaths, redact, scrubDeep, scrubText, secretValues } from "../guard/redact.ts";
import { formatSchemas, type SchemaFormat } from "../tool/schema.ts";
import type { Grant, ReportKind, ReportOptions } from "../tool/tool.ts";

const _ROOT = new URL("../..", import.meta.url).pathname;
const _TOOLSETS_DIR = join(_ROOT, "toolsets");
const _CACHE_VERSION = 2;
/** Sources being discovered at once (cache look-ups: reading and hashing files). */
const _DISCOVERY_CONCURRENCY = 32;
/** Discovery sandboxes running at once (each is a process for plugins). */
const _SANDBOX_SLOTS = (() => {
  try {
    return Math.max(2, Math.min(8, navigator.hardwareConcurrency * 2));
  } catch {
    return 2;
  }
})();

/** Where a toolset comes from. */
export type SourceKind = "builtin" | "plugin" | "package";

/** A toolset to load: its modules, its policy and its config section. */
export interface ToolsetSource {
  /** `files`, `plugin:<dir>/<stem>`, `package:<specifier>`. */
  id: string;
  kind: SourceKind;
  /** Module files (absolute paths) or specifiers. */
  modules: string[];
  policy: SandboxPolicy;
  /** The plugin's own section of the config, passed to `TOOL_SETUP`. */
  config?: unknown;
  /** Hosts its remote modules are imported from (cached code only). */
  imports?: string[];
}

/** Status of a tool in the catalog. */
export type ToolStatus = "loaded" | "skipped" | "overridden" | "dropped";

/** One tool as `list` shows it. */
export interface ToolInfo {
  name: string;
  description: string;
  toolset: string;
  kind: SourceKind;
  /** Module file or specifier the tool comes from. */
  source: string;
  permissions: string;
  status: ToolStatus;
  reason?: string;
  isolation: "worker" | "process";
  /** What a call of this tool may use. */
  grant: Grant;
  confirm: boolean;
  inputSchema: Record<string, unknown>;
  /** For tools that start processes: whether they run in the bwrap jail. */
  jail?: JailStatus;
}

/** A module (or whole toolset) that failed to load. */
export interface LoadProblem {
  toolset: string;
  source: string;
  message: string;
}

/** Options of {@link Registry.create}. */
export interface RegistryOptions {
  /** The workspace (default: the current directory). */
  workspace?: string;
  /** A loaded policy, or the path of permissions.json. */
  policy?: Policy;
  policyFile?: string;
  /** Letters the host grants (`-r -w -x -n`); default all. */
  privileges?: string;
  /** Override how Deno's own grants are queried (tests). */
  host?: HostPrivileges;
  /** On-demand toolsets to load besides the autoloaded ones. */
  toolsets?: string[];
  /** Load no built-in toolset at all (plugin tests). */
  noBuiltins?: boolean;
  /** Extra sources (file-drop plugins, packages), loaded after the built-ins in order. */
  sources?: ToolsetSource[];
  /** Discovery cache directory; `null` disables the cache. */
  cacheDir?: string | null;
  /** Where host warnings and reports go (default stderr). */
  reporter?: Reporter;
  /** Append one JSON line per call to this file (see core/guard/audit.ts). */
  auditPath?: string;
  /** The bwrap binary for the subprocess jail; `null`: none (tests). Default: detected. */
  bwrap?: string | null;
}

/** Per-call options of {@link Registry.call}. */
export interface RegistryCallOptions {
  signal?: AbortSignal;
  /** Shorter timeout than the policy's (never longer). */
  timeoutMs?: number;
  onReport?: (kind: ReportKind, message: string, options?: ReportOptions) => void;
  onLog?: (text: string) => void;
  /** Asked when a tool needs confirmation and the policy says `ask`. */
  confirm?: (tool: ToolInfo, args: unknown) => Promise<boolean> | boolean;
}

/** The built-in toolsets declared in toolsets/toolsets.json. */
export async function builtinToolsets(): Promise<
  Record<string, { autoload: boolean; description: string }>
> {
  const raw = JSON.parse(await Deno.readTextFile(join(_TOOLSETS_DIR, "toolsets.json")));
  delete raw.$comment;
  return raw;
}

/** Tool module files of a directory: sorted, skipping `_*` helpers and `*_test.*`. */
export async function toolModules(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (!e.isFile && !e.isSymlink) continue;
    if (!/\.(ts|js|mjs)$/.test(e.name)) continue;
    if (e.name.startsWith("_") || /_test\.(ts|js|mjs)$/.test(e.name)) continue;
    if (e.name.endsWith(".d.ts")) continue;
    out.push(join(dir, e.name));
  }
  return out.sort();
}

interface _Entry {
  info: ToolInfo;
  source: ToolsetSource;
  module: string;
}

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
  readonly workspace: string;
  readonly policy: Policy;
  readonly host: HostPrivileges;
  readonly reporter: Reporter;
  readonly problems: LoadProblem[] = [];
  readonly warnings: string[] = [];
  #entries: _Entry[] = [];
  #sources = new Map<string, ToolsetSource>();
  #envs = new WeakMap<Sandbox, SandboxEnv>();
  #byName = new Map<string, _Entry>();
  #sandboxes = new Map<string, Sandbox>();
  #loadedToolsets = new Set<string>();
  #cacheDir: string | null;
  #bwrap: string | undefined;
  #audit: AuditLog | undefined;
  /** Secret values of config sections, scrubbed from every text shown. */
  #secrets = new Set<string>();
  #cache: Record<string, ModuleMeta> | undefined;
  #cacheDirty = false;
  /** How many modules were imported in a sandbox (cache misses), for tests. */
  imports = 0;

  private constructor(
    workspace: string,
    policy: Policy,
    host: HostPrivileges,
    options: RegistryOptions,
  ) {
    this.workspace = workspace;
    this.policy = policy;
    this.host = host;
    this.reporter = options.reporter ?? new Reporter();
    this.#cacheDir = options.cacheDir === undefined ? _defaultCacheDir() : options.cacheDir;
  }

  /** Build the catalog: autoloaded built-ins, requested toolsets, then other sources. */
  static async create(options: RegistryOptions = {}): Promise<Registry> {
    const workspace = Deno.realPathSync(resolve(options.workspace ?? Deno.cwd()));
    const policy = options.policy ??
      await loadPolicy({ file: options.policyFile, workspace });
    const host = options.host ?? hostPrivileges(options.privileges ?? "rwxn");
    const registry = new Registry(workspace, policy, host, options);
    registry.#bwrap = options.bwrap === undefined
      ? await findBwrap({
        cacheFile: registry.#cacheDir ? join(registry.#cacheDir, "bwrap.json") : undefined,
      })
      : options.bwrap ?? undefined;
    if (options.auditPath) registry.#audit = new AuditLog(resolve(options.auditPath));
    if (!options.noBuiltins) {
      const declared = await builtinToolsets();
      for (const name of options.toolsets ?? []) {
        if (!(name in declared)) {
          throw new ConfigError(
            `Unknown toolset "${name}" (built-in toolsets: ${Object.keys(declared).join(", ")})`,
          );
        }
      }
      const names = Object.keys(declared).filter((n) =>
        declared[n].autoload || (options.toolsets ?? []).includes(n)
      );
      // A typo in the policy would silently grant nothing: say so.
      for (const name of policy.toolsetNames()) {
        if (!(name in declared)) {
          registry.#warn(
            `Warning: ${policy.file}: toolsets.${name}: no built-in toolset has that name ` +
              `(built-in toolsets: ${
                Object.keys(declared).join(", ")
              }; plugins go under "plugins")`,
          );
        }
      }
      for (const name of names) await registry.#loadSource(await registry.#builtinSource(name));
    }
    await registry.#loadSources(options.sources ?? []);
    await registry.#saveCache();
    for (const name of policy.toolNames()) {
      if (!registry.#entries.some((e) => e.info.name === name)) {
        registry.#warn(`Warning: ${policy.file}: tools.${name}: no loaded tool has that name`);
      }
    }
    return registry;
  }

  /** Add an on-demand built-in toolset at run time (e.g. `"net"`). */
  async addToolset(name: string): Promise<ToolInfo[]> {
    const declared = await builtinToolsets();
    if (!(name in declared)) {
      throw new TypeError(
        `Unknown toolset "${name}" (built-in toolsets: ${Object.keys(declared).join(", ")})`,
      );
    }
    if (this.#loadedToolsets.has(name)) return this.list().filter((t) => t.toolset === name);
    await this.#loadSource(await this.#builtinSource(name));
    await this.#saveCache();
    return this.list().filter((t) => t.toolset === name);
  }

  /** Add a toolset source (plugin or package) at run time. */
  async addSource(source: ToolsetSource): Promise<ToolInfo[]> {
    await this.#loadSource(source);
    await this.#saveCache();
    return this.list().filter((t) => t.toolset === source.id);
  }

  /** Remove a toolset (e.g. a deleted plugin file); its sandboxes stop. */
  async removeSource(id: string): Promise<void> {
    this.#entries = this.#entries.filter((e) => e.source.id !== id);
    this.problems.splice(0, this.problems.length, ...this.problems.filter((p) => p.toolset !== id));
    this.#loadedToolsets.delete(id);
    this.#sources.delete(id);
    for (const [key, sb] of this.#sandboxes) {
      if (key.startsWith(`${id}|`)) {
        await sb.close();
        this.#sandboxes.delete(key);
      }
    }
    this.#reindex();
  }

  /** The toolset sources loaded now, in load order. */
  sources(): ToolsetSource[] {
    return [...this.#sources.values()];
  }

  /** Every tool, loaded or not, in load order. */
  list(): ToolInfo[] {
    return this.#entries.map((e) => e.info);
  }

  /** The loaded tools only. */
  loaded(): ToolInfo[] {
    return this.list().filter((t) => t.status === "loaded");
  }

  /** The tool that a call by this name runs, if any. */
  get(name: string): ToolInfo | undefined {
    return this.#byName.get(name)?.info;
  }

  /** The permission letters a tool declares (`""` for none). Throws for unknown names. */
  permissionsOf(name: string): string {
    const e = this.#byName.get(name) ?? this.#entries.find((x) => x.info.name === name);
    if (!e) throw new TypeError(this.unknownToolMessage(name));
    return e.info.permissions;
  }

  /** Schemas of the loaded tools in one format. */
  schemas(format: SchemaFormat = "openai"): unknown[] {
    return formatSchemas(this.loaded(), format);
  }

  /** The names closest to `name`, for "did you mean". */
  closest(name: string, count = 3): string[] {
    const names = [...new Set(this.#entries.map((e) => e.info.name))];
    return names
      .map((n) => [n, _distance(n.toLowerCase(), name.toLowerCase())] as const)
      .sort((a, b) => a[1] - b[1])
      .slice(0, count)
      .map(([n]) => n);
  }

  /** `Unknown tool "X" (did you mean: A, B?)`. */
  unknownToolMessage(name: string): string {
    const near = this.closest(name);
    return `Unknown tool "${name}"${near.length ? ` (did you mean: ${near.join(", ")}?)` : ""}`;
  }

  /**
   * Call a tool in its sandbox. Unknown names throw a `TypeError`; every
   * other outcome is a {@link ToolResult}.
   */
  async call(name: string, args: unknown, options: RegistryCallOptions = {}): Promise<ToolResult> {
    if (!this.#audit) return this.#clean(await this.#call(name, args, options));
    const started = performance.now();
    const time = new Date().toISOString();
    let result: ToolResult;
    try {
      result = this.#clean(await this.#call(name, args, options));
    } catch (err) {
      await this.#auditCall(name, args, time, started, failure(name, (err as Error).message));
      throw err;
    }
    await this.#auditCall(name, args, time, started, result);
    return result;
  }

  /** Secrets scrubbed from the whole result; no host path outside the workspace in its error. */
  #clean(result: ToolResult): ToolResult {
    const out = scrubDeep(result, this.#secrets);
    if (typeof out.error === "string") out.error = hideHostPaths(out.error, this.workspace);
    return out;
  }

  async #auditCall(
    name: string,
    args: unknown,
    time: string,
    started: number,
    result: ToolResult,
  ): Promise<void> {
    if (!this.#audit) return;
    const entry = this.#byName.get(name) ?? this.#entries.find((e) => e.info.name === name);
    const info = entry?.info;
    const secrets = this.#secrets;
    try {
      await this.#audit.append({
        time,
        tool: name,
        toolset: info?.toolset ?? "",
        source: info?.kind ?? "",
        letters: info?.permissions ?? "",
        grant: info ? { ...info.grant } : null,
        isolation: info?.isolation ?? "",
        ...(info?.jail ? { jail: info.jail } : {}),
        args_sha256: await digestArgs(args ?? null),
        ...(entry?.source.policy.redact_args ? {} : { args: redact(args ?? null, secrets) }),
        duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
        outcome: outcomeOf(result),
        ...(result.error ? { error: scrubText(result.error, secrets) } : {}),
      });
    } catch (err) {
      this.reporter.line(
        `Warning: cannot write the audit log: ${(err as Error).message}`,
        "yellow",
      );
    }
  }

  /** Values of the allowlisted variables for subprocesses (the sandbox cannot read env). */
  #vars(policy: SandboxPolicy): Record<string, string> {
    const vars: Record<string, string> = {};
    for (const name of ["PATH", "LANG", "TERM", ...policy.env]) {
      try {
        const v = Deno.env.get(name);
        if (v !== undefined) vars[name] = v;
      } catch { /* no env permission for it */ }
    }
    return vars;
  }

  async #call(name: string, args: unknown, options: RegistryCallOptions): Promise<ToolResult> {
    const entry = this.#byName.get(name);
    if (!entry) {
      const other = this.#entries.find((e) => e.info.name === name);
      if (other) return failure(name, `not loaded: ${other.info.reason ?? other.info.status}`);
      throw new TypeError(this.unknownToolMessage(name));
    }
    const { info, source, module } = entry;
    if (info.confirm) {
      const rule = this.policy.confirm(name);
      if (rule === "never") {
        return failure(
          name,
          `refused by policy (permissions.json tools.${name}.confirm is "never")`,
        );
      }
      if (rule === "ask") {
        const yes = options.confirm ? await options.confirm(info, args) : false;
        if (!yes) {
          return failure(
            name,
            options.confirm
              ? "not confirmed"
              : `needs confirmation: approve it (corral call --yes) or set tools.${name}.confirm to "always" in permissions.json`,
          );
        }
      }
    }
    const sandbox = await this.#sandbox(source, info);
    const limit = source.policy.timeout_ms;
    const timeoutMs = options.timeoutMs ? Math.min(options.timeoutMs, limit) : limit;
    let env = this.#envs.get(sandbox);
    if (!env) {
      // One per sandbox: its tools share the grant, the config and the variables.
      env = {
        workspace: this.workspace,
        grant: info.grant,
        config: source.config,
        vars: this.#vars(source.policy),
      };
      this.#envs.set(sandbox, env);
    }
    const result = await sandbox.call(module, name, args, env, {
      timeoutMs,
      signal: options.signal,
      onReport: (kind, message, opts) => {
        message = scrubText(message, this.#secrets);
        if (options.onReport) options.onReport(kind, message, opts);
        else this.reporter.report(name, info.permissions, { kind, message, options: opts });
      },
      onLog: (text) => {
        text = scrubText(text, this.#secrets);
        if (options.onLog) options.onLog(text);
        else this.reporter.line(`[${name}] ${text}`, "dim");
      },
    });
    this.reporter.finish();
    return result;
  }

  /** The sandbox a tool's calls run in (shared by tools of a toolset with equal letters). */
  async sandboxFor(name: string): Promise<Sandbox> {
    const entry = this.#byName.get(name);
    if (!entry) throw new TypeError(this.unknownToolMessage(name));
    return await this.#sandbox(entry.source, entry.info);
  }

  /** Stop every sandbox. */
  async close(): Promise<void> {
    await Promise.all([...this.#sandboxes.values()].map((s) => s.close()));
    this.#sandboxes.clear();
  }

  async #sandbox(source: ToolsetSource, info: ToolInfo): Promise<Sandbox> {
    // Tools share a sandbox only when they hold exactly the same grant.
    const key = `${source.id}|${info.permissions}|${info.grant.run.join(",")}`;
    let sb = this.#sandboxes.get(key);
    if (!sb) {
      const modules = [
        ...new Set(
          this.#entries
            .filter((e) =>
              e.source.id === source.id && e.info.permissions === info.permissions &&
              e.info.grant.run.join(",") === info.grant.run.join(",")
            )
            .map((e) => e.module),
        ),
      ].filter((m) => m.startsWith("/"));
      sb = new Sandbox({
        label: `${source.id}[${info.permissions || "-"}]`,
        grant: info.grant,
        modules,
        policy: source.policy,
        imports: source.imports,
        workspace: this.workspace,
        onLog: (text) =>
          this.reporter.line(`[${source.id}] ${scrubText(text, this.#secrets)}`, "dim"),
      });
      this.#sandboxes.set(key, sb);
    }
    await sb.prepare();
    return sb;
  }

  async #builtinSource(name: string): Promise<ToolsetSource> {
    return {
      id: name,
      kind: "builtin",
      modules: await toolModules(join(_TOOLSETS_DIR, name)),
      policy: this.policy.toolset(name),
    };
  }

  /**
   * Load sources in order. Discovery (the sandbox work) of several sources
   * runs at once, `_DISCOVERY_CONCURRENCY` at a time; registration keeps the
   * given order, so "last registered wins" does not depend on timing.
   */
  async #loadSources(sources: ToolsetSource[]): Promise<void> {
    const found: Array<Promise<ModuleMeta[]> | undefined> = new Array(sources.length);
    let next = 0;
    const start = () => {
      if (next >= sources.length) return;
      const i = next++;
      found[i] = this.#discoverSource(sources[i]);
      found[i]!.then(start, start);
    };
    for (let k = 0; k < _DISCOVERY_CONCURRENCY; k++) start();
    for (let i = 0; i < sources.length; i++) {
      while (!found[i]) await Promise.race(found.filter(Boolean));
      this.#register(sources[i], await found[i]!);
    }
  }

  async #loadSource(source: ToolsetSource): Promise<void> {
    this.#register(source, await this.#discoverSource(source));
  }

  async #discoverSource(source: ToolsetSource): Promise<ModuleMeta[]> {
    for (const s of secretValues(source.config)) this.#secrets.add(s);
    const ceiling = ceilingGrant(source.policy, this.host);
    const ceilingJail = decideJail(
      ceiling,
      source.policy.jail ?? "auto",
      this.#bwrap,
      this.#jailWrite(source),
      source.policy.where,
      source.kind !== "builtin",
    );
    if (ceilingJail.jail) ceiling.jail = ceilingJail.jail;
    return await this.#discover(source, ceiling);
  }

  #register(source: ToolsetSource, metas: ModuleMeta[]): void {
    this.#loadedToolsets.add(source.id);
    this.#sources.set(source.id, source);
    for (const meta of metas) {
      if (meta.error || meta.problems.length) {
        const where = _display(meta.module, this.workspace);
        if (meta.error) {
          this.#problem(source.id, meta.module, `${where}: ${_oneLine(meta.error)}`);
        }
        for (const p of meta.problems) this.#problem(source.id, meta.module, `${where}: ${p}`);
      }
      for (const t of meta.tools) this.#add(source, meta.module, t);
    }
  }

  /** Paths the jail binds writable: the policy's write paths that the host may write. */
  #jailWrite(source: ToolsetSource): string[] {
    if (!this.host.letters.includes("w")) return [];
    return source.policy.write.filter((p) => this.host.denoGranted("write", p));
  }

  #problem(toolset: string, source: string, text: string): void {
    const message = scrubText(text, this.#secrets);
    this.problems.push({ toolset, source, message });
    this.reporter.line(`Warning: skipped ${message}`, "yellow");
  }

  #add(source: ToolsetSource, module: string, t: ToolMeta): void {
    const decision = effectiveGrant(t.permissions, source.policy, this.host);
    if (t.commands && t.permissions.includes("x") && !decision.missing) {
      // Least privilege inside a toolset: RunBashCode gets bash, not python3.
      const granted = decision.grant.run;
      decision.grant.run = granted.filter((c) => t.commands!.includes(c));
      if (decision.grant.run.length === 0) {
        decision.missing = `needs x (run) for ${
          t.commands.join(", ")
        }: permissions.json ${source.policy.where}.run does not list ${
          t.commands.length > 1 ? "them" : "it"
        }`;
      }
    }
    const jail = decideJail(
      decision.grant,
      source.policy.jail ?? "auto",
      this.#bwrap,
      this.#jailWrite(source),
      source.policy.where,
      source.kind !== "builtin",
    );
    if (jail.jail) decision.grant.jail = jail.jail;
    decision.missing ??= jail.missing;
    let status: ToolStatus = "loaded";
    let reason: string | undefined;
    if (!t.load.load) {
      status = "skipped";
      reason = t.load.reason;
    } else if (decision.missing) {
      status = "skipped";
      reason = decision.missing;
    }
    const info: ToolInfo = {
      name: t.name,
      description: scrubText(t.description, this.#secrets),
      toolset: source.id,
      kind: source.kind,
      source: module,
      permissions: t.permissions,
      status,
      reason,
      isolation: source.policy.isolation,
      grant: decision.grant,
      ...(jail.status ? { jail: jail.status } : {}),
      confirm: t.confirm,
      inputSchema: t.inputSchema,
    };
    const entry: _Entry = { info, source, module };
    if (status === "loaded") {
      const prev = this.#byName.get(t.name);
      if (prev) {
        const builtinVictim = prev.source.kind === "builtin" && source.kind !== "builtin";
        if (builtinVictim && !source.policy.allow_override) {
          info.status = "dropped";
          info.reason = `would replace built-in tool from ${
            _display(prev.module, this.workspace)
          }; allow it with "allow_override": true in permissions.json ${source.policy.where}`;
          this.#warn(
            `WARNING: tool "${t.name}" from ${
              _display(module, this.workspace)
            } dropped: ${info.reason}`,
          );
        } else {
          prev.info.status = "overridden";
          prev.info.reason = `replaced by ${_display(module, this.workspace)}`;
          this.#warn(
            `WARNING: tool "${t.name}" from ${
              _display(module, this.workspace)
            } replaces the one from ${_display(prev.module, this.workspace)}`,
          );
        }
      }
    }
    this.#entries.push(entry);
    if (info.status === "loaded") this.#byName.set(t.name, entry);
  }

  #warn(text: string): void {
    this.warnings.push(text);
    this.reporter.line(text, "yellow");
  }

  #reindex(): void {
    this.#byName.clear();
    for (const e of this.#entries) if (e.info.status === "loaded") this.#byName.set(e.info.name, e);
  }

  async #discover(source: ToolsetSource, ceiling: Grant): Promise<ModuleMeta[]> {
    const cache = await this.#loadCache();
    const fingerprint = JSON.stringify([
      _CACHE_VERSION,
      Deno.version.deno,
      ceiling,
      source.config ?? null,
    ]);
    const keys = new Map<string, string>();
    const found = new Map<string, ModuleMeta>();
    const computed = await Promise.all(
      source.modules.map((module) => this.#moduleKey(module, fingerprint)),
    );
    source.modules.forEach((module, i) => {
      const key = computed[i];
      keys.set(module, key);
      if (key && cache[key]) found.set(module, cache[key]);
    });
    const misses = source.modules.filter((m) => !found.has(m));
    if (misses.length) {
      this.imports += misses.length;
      await this.#slot();
      const sb = new Sandbox({
        label: `${source.id}[discovery]`,
        grant: ceiling,
        modules: misses.filter((m) => m.startsWith("/")),
        policy: source.policy,
        imports: source.imports,
        workspace: this.workspace,
        onLog: (text) =>
          this.reporter.line(`[${source.id}] ${scrubText(text, this.#secrets)}`, "dim"),
      });
      try {
        await sb.prepare();
        const env: SandboxEnv = {
          workspace: this.workspace,
          grant: ceiling,
          config: source.config,
          vars: this.#vars(source.policy),
        };
        for (const m of await sb.load(misses, env, source.policy.timeout_ms)) {
          found.set(m.module, m);
          const key = keys.get(m.module);
          // Only clean results are cached; failures are retried on the next start.
          if (key && !m.error && m.problems.length === 0) {
            cache[key] = m;
            this.#cacheDirty = true;
          }
        }
      } finally {
        await sb.close();
        this.#release();
      }
    }
    return source.modules.map((module) =>
      found.get(module) ?? { module, tools: [], problems: [], error: "no answer from its sandbox" }
    );
  }

  // Discovery sandboxes running at once (each is a process for plugins).
  #slotsFree = _SANDBOX_SLOTS;
  #slotWaiters: Array<() => void> = [];

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

  /** File texts read during this registry's life (modules share core files). */
  #texts = new Map<string, Promise<string>>();

  #read = (file: string): Promise<string> => {
    let p = this.#texts.get(file);
    if (!p) {
      p = Deno.readTextFile(file);
      this.#texts.set(file, p);
    }
    return p;
  };

  /** The cache key of a module: its local import graph's contents and the fingerprint. */
  async #moduleKey(module: string, fingerprint: string): Promise<string> {
    if (!module.startsWith("/")) return ""; // packages: never cached
    const id = `${module}\0${fingerprint}`;
    const known = this.#stats?.[id];
    if (known && _statsMatch(known.files)) return known.key;
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
        this.#cacheDirty = true;
      }
      return key;
    } catch {
      return "";
    }
  }

  #cacheLoading: Promise<Record<string, ModuleMeta>> | undefined;
  /** Size and mtime of each cached module's files, to skip re-hashing them. */
  #stats: Record<string, _StatEntry> | undefined;

  /** The discovery cache, read once (concurrent discoveries share one object). */
  #loadCache(): Promise<Record<string, ModuleMeta>> {
    return this.#cacheLoading ??= Promise.resolve().then(() => {
      let modules: Record<string, ModuleMeta> = {};
      let stats: Record<string, _StatEntry> = {};
      if (this.#cacheDir) {
        try {
          // One file, read once at start: sync avoids a thread-pool trip.
          const data = JSON.parse(Deno.readTextFileSync(join(this.#cacheDir, "discovery.json")));
          if (data && typeof data === "object" && data.version === _CACHE_VERSION) {
            modules = data.modules ?? {};
            stats = data.stats ?? {};
          }
        } catch { /* no cache yet, or unreadable: start empty */ }
      }
      this.#cache = modules;
      this.#stats = stats;
      return modules;
    });
  }

  async #saveCache(): Promise<void> {
    // File texts are remembered for one load only: later loads see edits.
    this.#texts.clear();
    if (!this.#cacheDir || !this.#cacheDirty || !this.#cache) return;
    this.#cacheDirty = false;
    try {
      await Deno.mkdir(this.#cacheDir, { recursive: true });
      const tmp = join(this.#cacheDir, `discovery.${crypto.randomUUID()}.tmp`);
      await Deno.writeTextFile(
        tmp,
        JSON.stringify({ version: _CACHE_VERSION, modules: this.#cache, stats: this.#stats }),
      );
      await Deno.rename(tmp, join(this.#cacheDir, "discovery.json"));
    } catch (err) {
      this.reporter.line(
        `Warning: cannot write the discovery cache: ${(err as Error).message}`,
        "yellow",
      );
    }
  }
}

/** A module's files with their size and mtime when its cache key was computed. */
interface _StatEntry {
  files: Array<[path: string, size: number, mtimeMs: number]>;
  key: string;
}

/** Files modified this recently are always re-hashed. */
const _RACY_MS = 3000;

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

function _defaultCacheDir(): string | null {
  try {
    const explicit = Deno.env.get("CORRAL_CACHE_DIR");
    if (explicit !== undefined) return explicit === "" ? null : explicit;
    const xdg = Deno.env.get("XDG_CACHE_HOME");
    const home = Deno.env.get("HOME");
    if (xdg) return join(xdg, "corral");
    if (home) return join(home, ".cache", "corral");
  } catch { /* no env permission */ }
  return null;
}

function _display(module: string, workspace: string): string {
  if (!module.startsWith("/")) return module;
  const inRoot = relative(_ROOT, module);
  if (!inRoot.startsWith("..")) return inRoot;
  const inWs = relative(workspace, module);
  return inWs.startsWith("..") ? `.../${basename(module)}` : inWs;
}

/** A module error on one line: no colours, the first line and the error's location. */
function _oneLine(text: string): string {
  // deno-lint-ignore no-control-regex
  const lines = text.replace(/\x1b\[[0-9;]*m/g, "").split("\n").map((l) => l.trim()).filter(
    Boolean,
  );
  const at = lines.slice(1).find((l) => /^at \S+:\d+:\d+$/.test(l));
  return at ? `${lines[0]} (${at})` : lines[0] ?? "";
}

function _distance(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0];
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j];
      dp[j] = Math.min(dp[j] + 1, dp[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length] - (a.includes(b) || b.includes(a) ? 1 : 0);
}
