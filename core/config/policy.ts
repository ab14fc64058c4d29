/**
 * The operator's policy, `permissions.json`: what each toolset (and each
 * plugin) may read, write, run and reach, how it is isolated and limited.
 * Validated with zod; every error names the file and the key path.
 *
 * @module
 */
import { isAbsolute, join, resolve } from "node:path";
import type { ParseError } from "jsonc-parser";
import { z } from "zod";
import type { JailMode } from "../guard/jail.ts";
import { ConfigError } from "../tool/errors.ts";
import type { Grant } from "../tool/tool.ts";
import { type CallLimits, callLimits } from "./call_limits.ts";
import { closestNames } from "./closest.ts";
import { expandHome } from "./env_var.ts";
import { protectedPaths } from "./protected_paths.ts";
import { type PolicyFile, policyFileSchema, type RawSandbox } from "./policy_schema.ts";
import { linkAbove } from "./grant_links.ts";

export type { PolicyFile } from "./policy_schema.ts";
import { configDir, INSTALL_DIR } from "./install_dir.ts";

/** How a toolset is isolated. */
export type Isolation = "worker" | "process";

/** How calls to a tool that needs confirmation are handled. */
export type ConfirmPolicy = "ask" | "always" | "never";

/** The resolved policy of one sandbox: absolute paths, limits filled in. */
export interface SandboxPolicy extends Omit<Grant, "jail">, CallLimits {
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
  /** Audit lines leave the arguments out (their digest stays). */
  redact_args?: boolean;
  /** Audit lines hold the argument values (`values`) or only their shape (`shape`, absent). */
  audit_args?: "values" | "shape";
  /** `rlimit`: accept rlimits where no cgroup is writable, even as root (an opt-out). */
  limits?: "cgroup" | "rlimit";
  /** Where the entry came from, for messages: `toolsets.files`. */
  where: string;
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

/** The loaded, validated and resolved policy. */
export class Policy {
  /** The file it came from, or `"(built-in defaults)"`. */
  readonly file: string;
  /** The workspace all relative paths are resolved against. */
  readonly workspace: string;
  readonly #raw: PolicyFile;

  /** Paths other programs run, kept read-only in write grants (core/config/protected_paths.ts). */
  readonly planted: string[];
  /** Default protected paths this file lifts (`unprotect`). */
  readonly unprotected: string[];

  constructor(raw: PolicyFile, workspace: string, file: string) {
    this.#raw = raw;
    this.workspace = workspace;
    this.file = file;
    const p = protectedPaths(raw.protect, raw.unprotect, file);
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
      ...(entry?.redact_args ?? d.redact_args ? { redact_args: true } : {}),
      ...(entry?.audit_args ?? d.audit_args
        ? { audit_args: entry?.audit_args ?? d.audit_args }
        : {}),
      ...(entry?.limits ?? d.limits ? { limits: entry?.limits ?? d.limits } : {}),
      ...callLimits(entry, d),
      where,
    };
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
  for (const list of [p.read, p.write, p.run, p.net, p.env, p.sys ?? []]) Object.freeze(list);
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

let _jsonc: typeof import("jsonc-parser") | undefined;

/**
 * Load the JSONC parser when `text` is not plain JSON (comments, trailing
 * commas). jsonc-parser is a CommonJS package: loading it starts Deno's
 * CommonJS loader, about 45 ms, which plain JSON never pays. The async
 * loaders call this; a synchronous caller with JSONC text calls it first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseJsonConfig, readyJsonc } from "./policy.ts";
 * import { z } from "zod";
 * const text = '{"a": 1, // one\n}';
 * await readyJsonc(text);
 * assert.ok(parseJsonConfig(text, "x.json", z.object({ a: z.number() })).a === 1);
 * ```
 */
export async function readyJsonc(text = "/"): Promise<void> {
  if (_jsonc) return;
  try {
    JSON.parse(text);
  } catch {
    _jsonc = await import("jsonc-parser");
  }
}

function _parseJsonc(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch { /* not plain JSON: JSONC, or an error to locate */ }
  if (!_jsonc) {
    throw new TypeError(`Cannot parse ${file}: JSONC text needs await readyJsonc(text) first`);
  }
  // JSONC: comments and trailing commas are fine (jsonc-parser, VS Code's own).
  const errors: ParseError[] = [];
  const json: unknown = _jsonc.parse(text, errors, { allowTrailingComma: true });
  if (errors.length) {
    const lines = errors.slice(0, 5).map((e) => {
      const before = text.slice(0, e.offset).split("\n");
      return `${file}:${before.length}:${before.at(-1)!.length + 1}: not valid JSON: ` +
        _jsonc!.printParseErrorCode(e.error);
    });
    throw new ConfigError(lines.join("\n"));
  }
  return json;
}

/**
 * Parse the JSON (or JSONC: comments, trailing commas) text of a
 * configuration file and validate it with `schema`.
 * Throws a {@link ConfigError} with one line per problem, each naming the
 * file and the key path (`corral.json: tool_dirs[1]: Expected string, …`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { parseJsonConfig } from "./policy.ts";
 * const v = parseJsonConfig('{"a": 1}', "x.json", z.object({ a: z.number() }));
 * assert.ok(v.a === 1);
 * ```
 */
export function parseJsonConfig<T extends z.ZodTypeAny>(
  text: string,
  file: string,
  schema: T,
): z.infer<T> {
  const json = _parseJsonc(text, file);
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) =>
      `${file}: ${formatPath(i.path)}: ${_issue(i, _knownKeys(schema, i.path))}`
    );
    throw new ConfigError(lines.join("\n"));
  }
  return parsed.data;
}

function _issue(i: z.ZodIssue, known: string[]): string {
  if (i.code === "unrecognized_keys") {
    const key = i.keys[0] ?? "";
    const near = i.keys.length === 1 && known.length
      ? closestNames(key, known, 1, Math.max(2, Math.floor(key.length / 3)))
      : [];
    return `unknown key${i.keys.length > 1 ? "s" : ""} ${i.keys.map((k) => `"${k}"`).join(", ")}` +
      (near.length ? ` (did you mean "${near[0]}"?)` : "");
  }
  if (i.code === "invalid_enum_value" && typeof i.received === "string") {
    const options = i.options.map(String);
    const near = closestNames(i.received, options, 1, Math.max(2, i.received.length / 2));
    return i.message + (near.length ? ` (did you mean "${near[0]}"?)` : "");
  }
  return i.message;
}

/** The keys the object schema at `path` knows (for "did you mean"). */
function _knownKeys(schema: z.ZodTypeAny, path: Array<string | number>): string[] {
  let s: z.ZodTypeAny | undefined = schema;
  const unwrap = (t: z.ZodTypeAny): z.ZodTypeAny =>
    t instanceof z.ZodOptional || t instanceof z.ZodDefault ? unwrap(t._def.innerType) : t;
  for (const step of path) {
    if (!s) return [];
    s = unwrap(s);
    if (s instanceof z.ZodObject) s = (s.shape as Record<string, z.ZodTypeAny>)[String(step)];
    else if (s instanceof z.ZodRecord) s = s._def.valueType;
    else if (s instanceof z.ZodArray) s = s._def.type;
    else return [];
  }
  if (!s) return [];
  s = unwrap(s);
  return s instanceof z.ZodObject ? Object.keys(s.shape) : [];
}

/** `["toolsets","files","read",0]` → `toolsets.files.read[0]`. */
export function formatPath(path: Array<string | number>): string {
  if (path.length === 0) return "(top level)";
  return path.map((p, i) => typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`).join("");
}

/**
 * Load the policy: `file` when given (`--permissions`), else
 * `permissions.json` in corral's config directory ({@link configDir}), else
 * the file shipped with corral. A `permissions.json` in the workspace is
 * never taken silently (a tool may be able to write it): it is named in
 * `ignored` so the caller can say so.
 */
export async function loadPolicy(
  options: { file?: string; workspace: string; configDir?: string },
): Promise<Policy & { ignored?: string }> {
  const shipped = join(INSTALL_DIR, "permissions.json");
  let file = options.file ? resolve(expandHome(options.file)) : undefined;
  let ignored: string | undefined;
  if (!file) {
    const own = join(options.configDir ?? configDir(), "permissions.json");
    file = await _exists(own) ? own : shipped;
    const local = resolve(options.workspace, "permissions.json");
    if (local !== file && await _exists(local)) ignored = local;
  }
  let text: string;
  try {
    text = await Deno.readTextFile(file);
    await readyJsonc(text);
  } catch (err) {
    throw new ConfigError(`Cannot read policy file "${file}": ${(err as Error).message}`);
  }
  const policy = parsePolicy(text, file, options.workspace) as Policy & { ignored?: string };
  if (ignored) policy.ignored = ignored;
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
