/**
 * The catalog: which tools exist, with which grant and which status. It
 * takes what discovery found in a toolset's sandbox and decides, tool by
 * tool, the effective grant (letters ∩ policy ∩ host), whether the jail
 * applies, whether the tool loads, and who wins a name collision. It runs
 * nothing: calls are the {@link CallRunner}'s job.
 *
 * @module
 */
import { closestNames } from "../config/mod.ts";
import type { JailStatus } from "../jail/mod.ts";
import { hideHostPaths, scrubText } from "../base/mod.ts";
import type { SecondWall } from "../seccomp/mod.ts";
import {
  ceilingGrant,
  effectiveGrant,
  type HostPrivileges,
  type ModuleMeta,
  type ToolMeta,
} from "../sandbox/mod.ts";
import { confine, type Confinement } from "./_confine.ts";
import { formatSchemas, type Grant, type Reporter, type SchemaFormat } from "../tool/mod.ts";
import { DEFINED_TWICE, displayModule, fullSource, LATER_USED, oneLine } from "./_catalog_text.ts";
import { type NotLoaded, notLoadedMessage } from "./not_loaded.ts";
import type { SourceKind, ToolsetSource } from "./toolset_source.ts";

export { DEFINED_TWICE, LATER_USED } from "./_catalog_text.ts";
export type { SourceKind, ToolsetSource } from "./toolset_source.ts";

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
  /** Why it runs in a worker, not the policy's process sandbox (the host's Deno flags). */
  fallback?: string;
  confirm: boolean;
  /** Calls need confirmation when this argument is truthy (e.g. `overwrite`). */
  confirmWhen?: string;
  inputSchema: Record<string, unknown>;
  /** A hosted server's MCP annotations, kept as it gave them. */
  annotations?: Record<string, unknown>;
  /** A hosted server's output schema: its MCP result's `structuredContent` is then its `result`. */
  outputSchema?: Record<string, unknown>;
  /** A hosted server's icons, as approved. */
  icons?: Array<Record<string, unknown>>;
  /** MCP `execution.taskSupport`: may or must run as a task (core/mcp/tasks/). */
  taskSupport?: "optional" | "required" | "forbidden";
  /** Its first questions are rounds of the request; then it becomes a task. */
  taskAfterInput?: boolean;
  /**
   * Whether its sandbox runs in the namespace whose mounts are its grant
   * (`bwrap`), or without it (`none`: worker isolation, `"jail": "off"`, or
   * a process sandbox holding no files or commands on a machine without bwrap).
   */
  jail?: JailStatus;
  /**
   * In the namespace, its second wall: the syscall filter (`on`, with the
   * refused syscalls its policy grants in `except`) or the opt-out (`off`).
   */
  seccomp?: { filter: "on" | "off"; except: string[] };
}

/** A module (or whole toolset) that failed to load. */
export interface LoadProblem {
  toolset: string;
  source: string;
  message: string;
}

/** One tool of the catalog with the toolset and module it comes from. */
export interface CatalogEntry {
  info: ToolInfo;
  source: ToolsetSource;
  module: string;
}

/** What a {@link Catalog} decides with. */
export interface CatalogOptions {
  /** The workspace (paths in messages are shown relative to it). */
  workspace: string;
  /** What the host itself may grant. */
  host: HostPrivileges;
  /** The working bwrap binary, if any (see core/jail/jail.ts). */
  bwrap: string | undefined;
  /** Why there is no working bwrap, for messages. */
  bwrapMissing?: string;
  /** The syscall filters of the jail's second wall (core/seccomp/wall.ts). */
  wall?: SecondWall;
  /** Built-in tool names (→ toolset), reserved even when that toolset is not loaded. */
  reserved?: Map<string, string>;
  /** Keep load problems in `problems` without printing each (the CLI prints one summary). */
  quietProblems?: boolean;
  /** Keep warnings in `warnings` without printing them (`corral call` prints its tool's). */
  quietWarnings?: boolean;
  /** Warnings already printed in this start, shared by its registries: each is printed once. */
  said?: Set<string>;
  /** Plugin files rejected before discovery, for the message of a name they may define. */
  rejected?: NotLoaded[];
  /** Where warnings and load problems are reported. */
  reporter: Reporter;
  /** Secret values scrubbed from descriptions, problems and warnings (shared, grows). */
  secrets: Set<string>;
}

/**
 * Every tool, loaded or not, in load order, and the one a call by a name
 * runs. Later registrations win a name, with a warning; a plugin replaces a
 * built-in only with `allow_override`.
 *
 * @example
 * ```ts ignore
 * const catalog = new Catalog({ workspace, host, bwrap: undefined, reporter, secrets: new Set() });
 * catalog.register(source, await discovery.discover(source, catalog.ceiling(source)));
 * console.log(catalog.list().map((t) => `${t.name}: ${t.status}`));
 * ```
 */
export class Catalog {
  /** Modules that failed to load, one entry each. */
  readonly problems: LoadProblem[] = [];
  /** Collisions, dropped tools and policy typos, as reported. */
  readonly warnings: string[] = [];
  readonly #options: CatalogOptions;
  #entries: CatalogEntry[] = [];
  #sources = new Map<string, ToolsetSource>();
  #byName = new Map<string, CatalogEntry>();

  constructor(options: CatalogOptions) {
    this.#options = options;
  }

  /**
   * The widest grant any tool of `source` can get: what its discovery
   * sandbox holds (jailed like its tools would be).
   */
  ceiling(source: ToolsetSource): Grant {
    const ceiling = ceilingGrant(source.policy, this.#options.host);
    // Without the namespace it needs, discovery holds no files or commands.
    if (this.confine(source, ceiling).missing) {
      return { ...ceiling, read: [], write: [], run: [] };
    }
    return ceiling;
  }

  /**
   * Whether a sandbox of `source` holding `grant` runs in the jail (`bwrap`,
   * with its second wall) or not (`none`), and why it cannot run at all
   * (`missing`): ./_confine.ts.
   */
  confine(source: ToolsetSource, grant: Grant): Confinement {
    return confine(source, grant, this.#options);
  }

  /** Whether a toolset with this id is registered. */
  has(id: string): boolean {
    return this.#sources.has(id);
  }

  /** Add what discovery found in one toolset: its tools and its load problems. */
  register(source: ToolsetSource, metas: ModuleMeta[]): void {
    this.#sources.set(source.id, source);
    for (const meta of metas) {
      if (meta.error || meta.problems.length) {
        const where = displayModule(meta.module, this.#options.workspace);
        if (meta.error) {
          this.#problem(source.id, meta.module, `${where}: ${oneLine(meta.error)}`);
        }
        for (const p of meta.problems) this.#problem(source.id, meta.module, `${where}: ${p}`);
      }
      for (const t of meta.tools) this.#add(source, meta.module, t);
    }
  }

  /** Forget a toolset (e.g. a deleted plugin file): its tools and problems. */
  remove(id: string): void {
    this.#entries = this.#entries.filter((e) => e.source.id !== id);
    this.problems.splice(0, this.problems.length, ...this.problems.filter((p) => p.toolset !== id));
    this.#sources.delete(id);
    this.#byName.clear();
    // A tool the removed toolset had replaced is callable again, as on a fresh start.
    for (const e of this.#entries) {
      if (e.info.status === "overridden" && !this.#replacedLater(e)) {
        e.info.status = "loaded";
        e.info.reason = undefined;
      }
      if (e.info.status === "loaded") this.#byName.set(e.info.name, e);
    }
  }

  /** Whether a later entry of the same name replaces `entry`. */
  #replacedLater(entry: CatalogEntry): boolean {
    const at = this.#entries.indexOf(entry);
    return this.#entries.some((e, i) =>
      i > at && e.info.name === entry.info.name &&
      (e.info.status === "loaded" || e.info.status === "overridden")
    );
  }

  /** The toolset sources registered now, in load order. */
  sources(): ToolsetSource[] {
    return [...this.#sources.values()];
  }

  /** Every entry, loaded or not, in load order. */
  entries(): readonly CatalogEntry[] {
    return this.#entries;
  }

  /** Every tool, loaded or not, in load order. */
  list(): ToolInfo[] {
    return this.#entries.map((e) => e.info);
  }

  /** The loaded tools only. */
  loaded(): ToolInfo[] {
    return this.list().filter((t) => t.status === "loaded");
  }

  /** The entry that a call by this name runs, if any. */
  entry(name: string): CatalogEntry | undefined {
    return this.#byName.get(name);
  }

  /** The entry a call runs, else any entry of that name (skipped, dropped, …). */
  anyEntry(name: string): CatalogEntry | undefined {
    return this.#byName.get(name) ?? this.#entries.find((e) => e.info.name === name);
  }

  /** The permission letters a tool declares (`""` for none). Throws for unknown names. */
  permissionsOf(name: string): string {
    const e = this.anyEntry(name);
    if (!e) throw new TypeError(this.unknownToolMessage(name));
    return e.info.permissions;
  }

  /** Schemas of the loaded tools in one format. */
  schemas(format: SchemaFormat = "openai"): unknown[] {
    return formatSchemas(this.loaded(), format);
  }

  /** The names closest to `name`, for "did you mean". */
  closest(name: string, count = 3): string[] {
    return closestNames(name, this.#entries.map((e) => e.info.name), count);
  }

  /**
   * `Unknown tool "X" (did you mean: A, B?)`, or why a plugin file that may
   * define X did not load (./not_loaded.ts). Paths outside the workspace
   * are shortened unless `hostPaths` (the operator's own terminal).
   */
  unknownToolMessage(name: string, hostPaths = false): string {
    const toolset = this.#options.reserved?.get(name);
    if (toolset) {
      return `Tool "${name}" is not loaded: it is a built-in tool of the toolset "${toolset}", ` +
        `which is not loaded now (load it with --toolset ${toolset}, or "toolsets": ` +
        `["${toolset}"] in corral.json)`;
    }
    const files = [...this.problems, ...this.#options.rejected ?? []];
    const message = notLoadedMessage(name, files, this.closest(name));
    return hostPaths ? message : hideHostPaths(message, this.#options.workspace);
  }

  /** Record and show a warning, once per start (a reload or another registry does not repeat it). */
  warn(text: string): void {
    this.warnings.push(text);
    const said = this.#options.said ?? (this.#said ??= new Set());
    if (said.has(text) || this.#options.quietWarnings) return;
    said.add(text);
    this.#options.reporter.line(text, "yellow");
  }

  #said: Set<string> | undefined;

  #problem(toolset: string, source: string, text: string): void {
    const message = scrubText(text, this.#options.secrets);
    this.problems.push({ toolset, source, message });
    if (!this.#options.quietProblems) {
      this.#options.reporter.line(`Warning: did not load: ${message}`, "yellow");
    }
  }

  #add(source: ToolsetSource, module: string, t: ToolMeta): void {
    const { decision, jail, status, reason } = this.#decide(source, t);
    const info: ToolInfo = {
      name: t.name,
      description: scrubText(t.description, this.#options.secrets),
      toolset: source.id,
      kind: source.kind,
      source: module,
      permissions: t.permissions,
      status,
      reason,
      isolation: source.policy.isolation,
      grant: decision.grant,
      ...(source.policy.fallback ? { fallback: source.policy.fallback } : {}),
      // Without the namespace it needs, the tool runs nowhere: no jail to show (not an opt-out).
      ...(jail.missing ? {} : { jail: jail.status }),
      ...(jail.wall && jail.wall.state !== "missing"
        ? { seccomp: { filter: jail.wall.state, except: [...source.policy.allow_syscalls ?? []] } }
        : {}),
      confirm: t.confirm,
      inputSchema: t.inputSchema,
      ..._optionalMeta(t),
    };
    const entry: CatalogEntry = { info, source, module };
    if (status === "loaded") this.#claimName(entry, t.name);
    this.#entries.push(entry);
    if (info.status === "loaded") this.#byName.set(t.name, entry);
  }

  /** The tool's grant under its toolset's policy and the host's letters, its jail, its status. */
  #decide(source: ToolsetSource, t: ToolMeta) {
    const decision = effectiveGrant(t.permissions, source.policy, this.#options.host);
    if (t.commands && t.permissions.includes("x") && !decision.missing) {
      // Least privilege inside a toolset: RunBashCode gets bash, not python3.
      const granted = decision.grant.run;
      decision.grant.run = granted.filter((c) => t.commands!.includes(c));
      if (decision.grant.run.length === 0) {
        decision.missing = `needs x (run) for ${
          t.commands.join(", ")
        }: ${source.policy.where}.run in ${
          source.policy.file ?? "permissions.json"
        } does not list ${t.commands.length > 1 ? "them" : "it"}`;
      }
    }
    // A grant reached through a link a tool could have made is no grant at all.
    const linked = source.policy.linkedLetters ?? "";
    // (It says more than "no write paths", which is what its dropped path leaves.)
    if ([...linked].some((l) => t.permissions.includes(l))) decision.missing = source.policy.linked;
    const jail = this.confine(source, decision.grant);
    // A missing letter comes first: it is what the operator changes (bash on PATH is moot without x).
    const letterMissing = decision.missing;
    decision.missing ??= jail.missing;
    let status: ToolStatus = "loaded";
    let reason: string | undefined;
    if (!t.load.load && !letterMissing) {
      status = "skipped";
      reason = t.load.reason;
    } else if (decision.missing) {
      status = "skipped";
      reason = decision.missing;
    }
    return { decision, jail, status, reason };
  }

  /**
   * A loaded tool takes its name: a built-in's (loaded or reserved) only
   * where the policy allows an override; otherwise the later one wins, with
   * a warning naming both.
   */
  #claimName(entry: CatalogEntry, name: string): void {
    const { info, source, module } = entry;
    const workspace = this.#options.workspace;
    const prev = this.#byName.get(name);
    const where = `${source.policy.where} of ${source.policy.file ?? "permissions.json"}`;
    const drop = (why: string) => {
      info.status = "dropped";
      info.reason = `${why}; allow it with "allow_override": true in ${where}`;
      this.warn(
        `Warning: tool "${name}" from ${fullSource(source, module)} dropped: ${info.reason}`,
      );
    };
    const reservedBy = this.#options.reserved?.get(name);
    if (!prev && reservedBy && source.kind !== "builtin") {
      // The built-in is not loaded now (on demand, or a letter missing): its name stays reserved.
      const what = `the name of built-in tool "${name}" (toolset ${reservedBy}, not loaded now)`;
      if (!source.policy.allow_override) drop(`would take ${what}`);
      else this.warn(`Warning: tool "${name}" from ${fullSource(source, module)} takes ${what}`);
    }
    if (!prev) return;
    if (
      prev.source.kind === "builtin" && source.kind !== "builtin" && !source.policy.allow_override
    ) {
      return drop(`would replace built-in tool from ${displayModule(prev.module, workspace)}`);
    }
    prev.info.status = "overridden";
    if (prev.module === module) {
      // One file, one name twice: one place to name, and the definition that wins.
      prev.info.reason = `${DEFINED_TWICE} ${displayModule(module, workspace)}; ${LATER_USED}`;
      this.warn(
        `Warning: tool "${name}" is ${DEFINED_TWICE} ${fullSource(source, module)}; ${LATER_USED}`,
      );
      return;
    }
    prev.info.reason = `replaced by the one from ${displayModule(module, workspace)}`;
    this.warn(
      `Warning: tool "${name}" from ${fullSource(source, module)} replaces the one from ${
        fullSource(prev.source, prev.module)
      }`,
    );
  }
}

/** What a tool's metadata carries only when it has it. */
function _optionalMeta(t: ToolMeta): Partial<ToolInfo> {
  return {
    ...(t.confirmWhen ? { confirmWhen: t.confirmWhen } : {}),
    ...(t.annotations ? { annotations: t.annotations } : {}),
    ...(t.taskSupport ? { taskSupport: t.taskSupport } : {}),
    ...(t.taskAfterInput ? { taskAfterInput: true } : {}),
    ...(t.outputSchema ? { outputSchema: t.outputSchema } : {}),
    ...(t.icons ? { icons: t.icons } : {}),
  };
}
