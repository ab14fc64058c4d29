/**
 * The operator's policy, `permissions.json`: what each toolset (and each
 * plugin) may read, write, run and reach, how it is isolated and limited.
 * Validated with zod; every error names the file and the key path.
 *
 * @module
 */
import { isAbsolute, join, resolve } from "node:path";
import type { JailMode } from "../jail/mod.ts";
import { ConfigError, type Grant } from "../tool/mod.ts";
import { type CallLimits, callLimits } from "./_call_limits.ts";
import { type LayerLimits, layerLimits } from "./layer_limits.ts";
import { expandHome } from "./env_var.ts";
import { parseJsonConfig, readyJsonc } from "./_json_config.ts";
import { type LayerRole, mergeLayers, type SettingsLayer } from "./layers.ts";
import { protectedPaths } from "./protected_paths.ts";
import { type PolicyFile, policyFileSchema, type RawSandbox } from "./policy_schema.ts";
import { linkAbove } from "./_grant_links.ts";

export type { PolicyFile } from "./policy_schema.ts";
import { configDir, INSTALL_DIR } from "./install_dir.ts";

export { formatPath, parseJsonConfig, readyJsonc } from "./_json_config.ts";

/** The lists of permissions.json that a higher layer adds to instead of replacing. */
export const POLICY_ADD_UP = ["protect", "unprotect"] as const;

/** How a toolset is isolated. */
export type Isolation = "worker" | "process";

/** How calls to a tool that needs confirmation are handled. */
export type ConfirmPolicy = "ask" | "always" | "never";

/** The resolved policy of one sandbox: absolute paths, limits filled in. */
export interface SandboxPolicy extends Omit<Grant, "jail">, CallLimits, Partial<LayerLimits> {
  /**
   * Why its grant is refused: a path of it inside the workspace is reached
   * through a symlink there (which a tool could have made); its tools do
   * not load.
   */
  linked?: string;
  /** The letters whose lists had such a path (dropped from them): `r`, `w` or both. */
  linkedLetters?: string;
  isolation: Isolation;
  timeout_ms: number;
  /** How long discovery may import a module. */
  discovery_timeout_ms: number;
  /** Plugins one discovery process imports at most (absent: the default, 64). */
  discovery_batch?: number;
  memory_mb: number;
  max_output_bytes: number;
  /** The files tools refuse files larger than this. */
  max_read_bytes: number;
  /** Processes and threads of one process sandbox. */
  max_processes: number;
  allow_override: boolean;
  env: string[];
  /** A hosted npm server's Deno `--allow-sys` names (`servers.<name>.sys`); absent: none. */
  sys?: string[];
  /** The sandbox namespace: `off` opts out (absent: required). */
  jail?: JailMode;
  /** The jail's syscall filter: `off` opts out (absent: required). */
  seccomp?: "required" | "off";
  /** Syscalls the filter refuses that this sandbox may make (core/seccomp/rules.ts names). */
  allow_syscalls?: string[];
  /** Audit lines leave the arguments out (their digest stays). */
  redact_args?: boolean;
  /** Audit lines hold the argument values (`values`) or only their shape (`shape`, absent). */
  audit_args?: "values" | "shape";
  /** Every call's changes are held for review, not applied (`hold`, or `defaults.hold`). */
  hold?: boolean;
  /** `rlimit`: accept rlimits where no cgroup is writable, even as root (an opt-out). */
  limits?: "cgroup" | "rlimit";
  /** Where the entry came from, for messages: `toolsets.files`. */
  where: string;
  /**
   * Set when the host's own Deno flags forbid the policy's process sandbox:
   * why it runs in a worker instead (core/registry/host_fallback.ts).
   */
  fallback?: string;
  /** The permissions.json to edit to change it (the highest layer in effect). */
  file?: string;
  /** For a plugin served by `plugins.default`: its own key (`plugins.<name>`), the narrowest fix. */
  own?: string;
}

/** Limits used where permissions.json says nothing. */
export const DEFAULT_LIMITS = {
  timeout_ms: 60_000,
  memory_mb: 512,
  max_output_bytes: 1_000_000,
  max_read_bytes: 16 * 1024 * 1024,
  max_processes: 128,
} as const;

/** How a policy was put together from its layers (core/config/layers.ts). */
export interface PolicyLayers {
  /** Every file in effect, lowest first. */
  files: string[];
  /** The files each key path came from. */
  origins: Map<string, string[]>;
  /** The file an operator edits to change a grant: the highest layer in effect (not corral's). */
  editFile: string;
}

/** The loaded, validated and resolved policy. */
export class Policy {
  /** The highest file it came from, or `"(built-in defaults)"`. */
  readonly file: string;
  /** Every file in effect, lowest first (shipped, user, trusted project, --permissions). */
  readonly files: string[];
  /** The file to edit to change a grant (named in refusals). */
  readonly editFile: string;
  readonly #origins: Map<string, string[]>;
  /** The workspace all relative paths are resolved against. */
  readonly workspace: string;
  readonly #raw: PolicyFile;

  /** Paths other programs run, kept read-only in write grants (core/config/protected_paths.ts). */
  readonly planted: string[];
  /** Default protected paths this file lifts (`unprotect`). */
  readonly unprotected: string[];

  constructor(raw: PolicyFile, workspace: string, file: string, layers?: PolicyLayers) {
    this.#raw = raw;
    this.workspace = workspace;
    this.file = file;
    this.files = layers?.files ?? (file.startsWith("(") ? [] : [file]);
    this.editFile = layers?.editFile ?? file;
    this.#origins = layers?.origins ?? new Map();
    const p = protectedPaths(raw.protect, raw.unprotect, this.origin("protect"));
    this.planted = p.entries;
    this.unprotected = p.lifted;
  }

  /**
   * The policy of a built-in toolset. Built-ins default to process
   * isolation, like plugins; `"isolation": "worker"` trusts a toolset.
   */
  toolset(name: string): SandboxPolicy {
    return this.#resolve(this.#raw.toolsets?.[name], `toolsets.${name}`, "process");
  }

  /**
   * The policy of a plugin (`plugin:<dir>/<stem>` or a package specifier):
   * its own entry in `plugins`, else `plugins.default`, else nothing granted.
   * Plugins default to process isolation.
   */
  plugin(id: string, shortName?: string): SandboxPolicy {
    const p = this.#raw.plugins ?? {};
    const key = id in p ? id : shortName && shortName in p ? shortName : "default";
    // Plugins sharing an entry (usually plugins.default) share its resolved form.
    const cacheKey = key === "default" ? `default\0${shortName ?? id}` : key;
    let resolved = this.#plugins.get(cacheKey);
    if (!resolved) {
      const r = this.#resolve(p[key], `plugins.${key}`, "process");
      if (key === "default") r.own = `plugins.${shortName ?? id}`;
      resolved = _frozen(r);
      this.#plugins.set(cacheKey, resolved);
    }
    return resolved;
  }

  /** The policy of a hosted MCP server: `servers.<name>`, else nothing granted. */
  server(name: string): SandboxPolicy {
    return this.#resolve(this.#raw.servers?.[name], `servers.${name}`, "process");
  }

  /**
   * The file a key path (`toolsets.files.read`) was set in: the highest one
   * that set it or anything below it, else {@link file}.
   */
  origin(key: string): string {
    const exact = this.#origins.get(key);
    if (exact) return exact.at(-1)!;
    let found: string | undefined;
    for (const [k, files] of this.#origins) {
      if (k.startsWith(`${key}.`) || k.startsWith(`${key}[`)) found = files.at(-1);
    }
    return found ?? this.file;
  }

  /** The plugin entry names the file has (besides `default`). */
  pluginNames(): string[] {
    return Object.keys(this.#raw.plugins ?? {}).filter((k) => k !== "default");
  }

  #plugins = new Map<string, SandboxPolicy>();

  /** The toolset names the file has an entry for. */
  toolsetNames(): string[] {
    return Object.keys(this.#raw.toolsets ?? {});
  }

  /** The tool names the file has a `tools` entry for. */
  toolNames(): string[] {
    return Object.keys(this.#raw.tools ?? {});
  }

  /** The confirmation policy of a tool (default `ask`). */
  confirm(tool: string): ConfirmPolicy {
    return this.#raw.tools?.[tool]?.confirm ?? "ask";
  }

  /** Whether a tool's changes are held for review (`tools.<name>.hold`; default no). */
  hold(tool: string): boolean {
    return this.#raw.tools?.[tool]?.hold === true;
  }

  #resolve(entry: RawSandbox | undefined, where: string, isolation: Isolation): SandboxPolicy {
    const d = this.#raw.defaults ?? {};
    const links: string[] = [];
    let letters = "";
    // A path reached through a link inside the workspace is no grant: dropped, and said.
    const paths = (list: string[] | undefined, key: "read" | "write") =>
      (list ?? []).flatMap((p) => {
        const link = linkAbove(p, this.workspace);
        if (!link) return [this.resolvePath(p)];
        links.push(
          `permissions.json ${where}.${key} "${p}" is reached through the symlink ${link}`,
        );
        letters += key === "read" ? "r" : "w";
        return [];
      });
    const read = paths(entry?.read, "read"), write = paths(entry?.write, "write");
    return {
      ...(links.length
        ? {
          linked: `${links.join("; ")} inside the workspace, which a tool could have made: ` +
            `that grant is refused (replace the link by a folder, or name its target)`,
          linkedLetters: letters,
        }
        : {}),
      read,
      write,
      run: [...(entry?.run ?? [])],
      net: [...(entry?.net ?? [])],
      env: [...(d.env ?? []), ...(entry?.env ?? [])],
      isolation: entry?.isolation ?? isolation,
      timeout_ms: entry?.timeout_ms ?? d.timeout_ms ?? DEFAULT_LIMITS.timeout_ms,
      discovery_timeout_ms: entry?.discovery_timeout_ms ?? d.discovery_timeout_ms ??
        Math.min(entry?.timeout_ms ?? d.timeout_ms ?? DEFAULT_LIMITS.timeout_ms, 10_000),
      ...(entry?.discovery_batch ?? d.discovery_batch
        ? { discovery_batch: entry?.discovery_batch ?? d.discovery_batch }
        : {}),
      memory_mb: entry?.memory_mb ?? d.memory_mb ?? DEFAULT_LIMITS.memory_mb,
      max_output_bytes: entry?.max_output_bytes ?? d.max_output_bytes ??
        DEFAULT_LIMITS.max_output_bytes,
      max_read_bytes: entry?.max_read_bytes ?? d.max_read_bytes ?? DEFAULT_LIMITS.max_read_bytes,
      max_processes: entry?.max_processes ?? d.max_processes ?? DEFAULT_LIMITS.max_processes,
      allow_override: entry?.allow_override ?? false,
      ...(entry?.sys?.length ? { sys: [...entry.sys] } : {}),
      // Absent: the defaults (core/guard/planted.ts); set only when the operator changed them.
      ...(this.unprotected.length || this.#raw.protect?.length ? { planted: this.planted } : {}),
      ...(entry?.jail ?? d.jail ? { jail: entry?.jail ?? d.jail } : {}),
      ...(entry?.seccomp ?? d.seccomp ? { seccomp: entry?.seccomp ?? d.seccomp } : {}),
      ...(entry?.allow_syscalls?.length ? { allow_syscalls: [...entry.allow_syscalls] } : {}),
      ...(entry?.redact_args ?? d.redact_args ? { redact_args: true } : {}),
      ...(entry?.audit_args ?? d.audit_args
        ? { audit_args: entry?.audit_args ?? d.audit_args }
        : {}),
      ...(entry?.limits ?? d.limits ? { limits: entry?.limits ?? d.limits } : {}),
      ...(entry?.hold ?? d.hold ? { hold: true } : {}),
      ...callLimits(entry, d),
      ...layerLimits(entry, d),
      where,
      file: this.editFile,
    };
  }

  /** Every list of refused syscalls a sandbox entry grants (`allow_syscalls`: core/seccomp/). */
  syscallGrants(): string[][] {
    const r = this.#raw;
    return [r.toolsets, r.plugins, r.servers].flatMap((m) => Object.values(m ?? {}))
      .map((e) => e.allow_syscalls ?? []).filter((l) => l.length > 0);
  }

  /** Resolve a policy path against the workspace, following symlinks. */
  resolvePath(p: string): string {
    const path = expandHome(p);
    const abs = isAbsolute(path) ? path : resolve(this.workspace, path);
    try {
      return Deno.realPathSync(abs);
    } catch {
      return abs; // not there yet: keep it as written, absolute
    }
  }
}

/** Shared between plugins, so nobody may change it. */
function _frozen(p: SandboxPolicy): SandboxPolicy {
  for (const list of [p.read, p.write, p.run, p.net, p.env, p.sys ?? [], p.allow_syscalls ?? []]) {
    Object.freeze(list);
  }
  return Object.freeze(p);
}

/**
 * Validate policy JSON text; throws {@link ConfigError} naming `file` and the
 * key path of every problem (`toolsets.files.read[0]: Expected string, received number`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePolicy } from "./policy.ts";
 * const p = parsePolicy('{"toolsets":{"files":{"read":["."]}}}', "permissions.json", "/tmp");
 * assert.ok(p.toolset("files").read[0] === Deno.realPathSync("/tmp"));
 * ```
 */
export function parsePolicy(text: string, file: string, workspace: string): Policy {
  return new Policy(parseJsonConfig(text, file, policyFileSchema), workspace, file);
}

/**
 * One layer of the policy: `file` read, validated (errors name it) and
 * ready to merge. The text may be given (a trusted project file's, checked
 * against its hash).
 */
export async function policyLayer(
  file: string,
  role: LayerRole,
  text?: string,
): Promise<SettingsLayer> {
  try {
    text ??= await Deno.readTextFile(file);
    await readyJsonc(text);
  } catch (err) {
    throw new ConfigError(`Cannot read policy file "${file}": ${(err as Error).message}`);
  }
  return { file, role, data: parseJsonConfig(text, file, policyFileSchema) };
}

/**
 * The policy of `layers` (lowest first) merged by key (core/config/layers.ts);
 * `editFile` is where a grant is changed (default: the highest layer's file).
 */
export function layeredPolicy(
  layers: SettingsLayer[],
  workspace: string,
  editFile?: string,
): Policy {
  const merged = mergeLayers(layers, POLICY_ADD_UP);
  const files = layers.map((l) => l.file);
  const top = files.at(-1) ?? "(built-in defaults)";
  return new Policy(merged.value as PolicyFile, workspace, top, {
    files,
    origins: merged.origins,
    editFile: editFile ?? top,
  });
}

/** The policy file shipped with corral: the lowest layer of every policy. */
export const SHIPPED_POLICY: string = join(INSTALL_DIR, "permissions.json");

/**
 * Load the policy: `file` alone when given; else the file shipped with
 * corral with `permissions.json` of corral's config directory
 * ({@link configDir}) merged over it by key. A `permissions.json` in the
 * workspace is never taken here (a tool may be able to write it; the CLI
 * takes a trusted one, core/config/settings.ts): it is named in `ignored`
 * so the caller can say so.
 */
export async function loadPolicy(
  options: { file?: string; workspace: string; configDir?: string },
): Promise<Policy & { ignored?: string }> {
  if (options.file) {
    const file = resolve(expandHome(options.file));
    return layeredPolicy([await policyLayer(file, "flag")], options.workspace);
  }
  const own = join(options.configDir ?? configDir(), "permissions.json");
  const layers = [await policyLayer(SHIPPED_POLICY, "shipped")];
  if (await _exists(own)) layers.push(await policyLayer(own, "user"));
  const policy: Policy & { ignored?: string } = layeredPolicy(layers, options.workspace, own);
  const local = resolve(options.workspace, "permissions.json");
  if (local !== policy.file && await _exists(local)) policy.ignored = local;
  return policy;
}

async function _exists(p: string): Promise<boolean> {
  try {
    await Deno.stat(p);
    return true;
  } catch {
    return false;
  }
}
