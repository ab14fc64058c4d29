/**
 * `corral.json`: the operator's config. File-drop directories
 * (`tool_dirs`), package plugins (`plugins`), per-plugin sections
 * (`services`), on-demand toolsets and the audit log. Validated with zod;
 * relative paths resolve against the file's own folder.
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { z } from "zod";
import { ConfigError } from "../tool/mod.ts";
import { expandHome } from "./env_var.ts";
import { configDir } from "./install_dir.ts";
import { parseJsonConfig, readyJsonc } from "./_json_config.ts";
import { type LayerRole, mergeLayers, type SettingsLayer } from "./layers.ts";
import {
  type AuthConfig,
  authSchema,
  identitiesSchema,
  type IdentityConfig,
  resolveTeamConfig,
} from "./team_config.ts";
import { localPath, serverEntries, type ServerEntry, serversSchema } from "./server_config.ts";

/** The name of the config file looked up in the working directory. */
export const CONFIG_FILE_NAME = "corral.json";

const _configSchema = z.object({
  $schema: z.string().optional(),
  $comment: z.string().optional(),
  tool_dirs: z.array(z.string().min(1, "must not be empty")).optional()
    .describe("File-drop directories, in order; ~ is the home directory"),
  plugins: z.array(z.string().min(1, "must not be empty")).optional()
    .describe("Package plugins: npm:, jsr:, https: specifiers or local paths"),
  services: z.record(z.string(), z.unknown()).optional()
    .describe("Per-plugin config sections, passed to the plugin's TOOL_SETUP"),
  toolsets: z.array(z.string()).optional().describe("On-demand built-in toolsets to load"),
  default_plugin_dir: z.boolean().optional()
    .describe("Load plugins/ of corral's config directory (default true)"),
  audit: z.string().min(1, "must not be empty").optional()
    .describe("Append one JSON line per call to this file (like --audit)"),
  audit_required: z.boolean().optional()
    .describe("Refuse calls when the audit log cannot be written (default true)"),
  audit_max_bytes: z.number().int().nonnegative().optional()
    .describe(
      "Total size of the audit log and its 4 rotated files (default 1 GiB; 0: no rotation)",
    ),
  shared_state: z.string().regex(/^redis:\/\/[^\s/]+(\/\d*)?$/, "must be redis://HOST:PORT")
    .optional().describe("Replicas share rate buckets, session counts, revocations (Redis)"),
  identities: identitiesSchema.optional()
    .describe("HTTP callers by name: tools, workspace, limits (core/config/team_config.ts)"),
  auth: authSchema.optional().describe("HTTP authentication: tokens file, JWKS"),
  servers: serversSchema.optional()
    .describe("Hosted MCP servers (npm, pypi or command), see core/config/server_config.ts"),
}).strict();

/** The lists of corral.json that a higher layer adds to instead of replacing. */
export const CONFIG_ADD_UP = ["tool_dirs", "plugins", "toolsets"] as const;

/** The raw, validated shape of one `corral.json`. */
export type ConfigFile = z.infer<typeof _configSchema>;

/** The validated `corral.json`, with directories and local paths made absolute. */
export interface CorralConfig {
  /** The file it came from (the highest layer's), or null when there is none. */
  file: string | null;
  /** Every file in effect, lowest first (user, trusted project, --config). */
  files?: string[];
  /** The folder each local package path of `plugins` resolves against (default: baseDir). */
  packageBase?: Record<string, string>;
  /** The file each of `toolDirs` was listed in (default: {@link file}). */
  toolDirFrom?: Record<string, string>;
  /** File-drop directories from `tool_dirs`, absolute, in order. */
  toolDirs: string[];
  /** Package plugins from `plugins`, as written. */
  plugins: string[];
  /** Per-plugin sections: `services.<plugin name>`. */
  services: Record<string, unknown>;
  /** On-demand built-in toolsets to load. */
  toolsets: string[];
  /** Whether the user's `plugins/` directory (in corral's config directory) loads. */
  defaultPluginDir: boolean;
  /** The directory relative paths of the config resolve against. */
  baseDir: string;
  /** The audit log from `audit` (absolute), or null: off unless `--audit` is given. */
  audit: string | null;
  /** Refuse calls when the audit log cannot be written (default true). */
  auditRequired: boolean;
  /** The audit log's total with its rotated files (`audit_max_bytes`), or null: the default. */
  auditMaxBytes: number | null;
  /** `shared_state`: the Redis that replicas share limits through (like --shared-state), or null. */
  sharedState: string | null;
  /** HTTP callers by name, from `identities` (empty: one identity, every tool). */
  identities: Record<string, IdentityConfig>;
  /** HTTP authentication, from `auth`. */
  auth: AuthConfig;
  /** Hosted MCP servers from `servers`, in order. */
  servers: ServerEntry[];
}

/** An empty config (no file): only the user's `plugins/` directory. */
export function emptyConfig(baseDir: string = Deno.cwd()): CorralConfig {
  return {
    file: null,
    toolDirs: [],
    plugins: [],
    services: {},
    toolsets: [],
    defaultPluginDir: true,
    baseDir,
    audit: null,
    auditRequired: true,
    auditMaxBytes: null,
    sharedState: null,
    ...resolveTeamConfig(undefined, undefined, baseDir, "corral.json"),
    servers: [],
  };
}

/**
 * Validate `corral.json` text. Throws a {@link ConfigError} naming the file
 * and the key path of every problem (`corral.json: tool_dirs[1]: Expected string, received number`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseConfig } from "./corral_config.ts";
 * const c = parseConfig('{"tool_dirs": ["tools"], "services": {"weather": {"key": "k"}}}', "/srv/corral.json");
 * assert.ok(c.toolDirs[0] === "/srv/tools" && c.services.weather !== undefined);
 * ```
 */
export function parseConfig(text: string, file: string): CorralConfig {
  return _resolved(parseJsonConfig(text, file, _configSchema), resolve(file));
}

/** The config of validated raw data `d`, its paths relative to `file`'s folder. */
function _resolved(d: ConfigFile, file: string, files?: string[]): CorralConfig {
  const baseDir = dirname(file);
  return {
    file,
    ...(files ? { files } : {}),
    toolDirs: (d.tool_dirs ?? []).map((p) => resolve(baseDir, expandHome(p))),
    plugins: d.plugins ?? [],
    services: d.services ?? {},
    toolsets: d.toolsets ?? [],
    defaultPluginDir: d.default_plugin_dir ?? true,
    baseDir,
    audit: d.audit ? resolve(baseDir, expandHome(d.audit)) : null,
    auditRequired: d.audit_required ?? true,
    auditMaxBytes: d.audit_max_bytes ?? null,
    sharedState: d.shared_state ?? null,
    ...resolveTeamConfig(d.identities, d.auth, baseDir, file),
    servers: serverEntries(d.servers ?? {}, file),
  };
}

/**
 * One layer of the config: `file` read and validated (errors name it), its
 * paths made absolute against its own folder so that layers can merge. The
 * text may be given (a trusted project file's, checked against its hash).
 */
export async function configLayer(
  file: string,
  role: LayerRole,
  text?: string,
): Promise<SettingsLayer> {
  try {
    text ??= await Deno.readTextFile(file);
    await readyJsonc(text);
  } catch (err) {
    throw new ConfigError(`Cannot read config file "${file}": ${(err as Error).message}`);
  }
  const d = parseJsonConfig(text, file, _configSchema);
  const dir = dirname(file);
  const abs = (p: string) => resolve(dir, expandHome(p));
  if (d.tool_dirs) d.tool_dirs = d.tool_dirs.map(abs);
  if (d.audit) d.audit = abs(d.audit);
  for (const id of Object.values(d.identities ?? {})) {
    if (id.workspace) id.workspace = abs(id.workspace);
  }
  if (d.auth?.tokens_file) d.auth.tokens_file = abs(d.auth.tokens_file);
  if (d.auth?.workspaces_dir) d.auth.workspaces_dir = abs(d.auth.workspaces_dir);
  if (d.auth?.jwks?.file) d.auth.jwks.file = abs(d.auth.jwks.file);
  for (const server of Object.values(d.servers ?? {})) {
    if (server.command) server.command = server.command.map((p) => localPath(p, dir));
  }
  return { file, role, data: d as Record<string, unknown> };
}

/**
 * The config of `layers` (lowest first) merged by key (core/config/layers.ts);
 * none: the empty config with `baseDir` as its folder.
 */
export function layeredConfig(layers: SettingsLayer[], baseDir: string): CorralConfig {
  if (!layers.length) return { ...emptyConfig(baseDir), files: [] };
  const merged = mergeLayers(layers, CONFIG_ADD_UP);
  const d = merged.value as ConfigFile;
  const top = layers.at(-1)!.file;
  // Each local package path resolves against the folder of the file that listed it.
  const packageBase: Record<string, string> = {};
  const toolDirFrom: Record<string, string> = {};
  for (const l of layers) {
    for (const spec of (l.data as ConfigFile).plugins ?? []) packageBase[spec] ??= dirname(l.file);
    for (const dir of (l.data as ConfigFile).tool_dirs ?? []) toolDirFrom[dir] ??= l.file;
  }
  if (d.servers) {
    for (const name of Object.keys(d.servers)) {
      serverEntries(
        { [name]: d.servers[name] },
        merged.origins.get(`servers.${name}`)?.at(-1) ??
          _originBelow(merged.origins, `servers.${name}`) ?? top,
      );
    }
  }
  return { ..._resolved(d, top, layers.map((l) => l.file)), packageBase, toolDirFrom };
}

function _originBelow(origins: Map<string, string[]>, key: string): string | undefined {
  let found: string | undefined;
  for (const [k, f] of origins) if (k.startsWith(`${key}.`)) found = f.at(-1);
  return found;
}

/**
 * Load the config: `file` when given (`--config`; it must exist), else
 * `corral.json` in corral's config directory when present, else an empty
 * config. A `corral.json` in the workspace is never taken silently (a tool
 * may be able to write it): it is named in `ignored`.
 */
export async function loadConfig(
  options: { file?: string; workspace?: string; configDir?: string } = {},
): Promise<CorralConfig & { ignored?: string }> {
  const workspace = resolve(options.workspace ?? Deno.cwd());
  const file = options.file
    ? resolve(expandHome(options.file))
    : join(options.configDir ?? configDir(), CONFIG_FILE_NAME);
  let text: string;
  try {
    text = await Deno.readTextFile(file);
    await readyJsonc(text);
  } catch (err) {
    if (!options.file && err instanceof Deno.errors.NotFound) {
      const config: CorralConfig & { ignored?: string } = emptyConfig(workspace);
      const local = join(workspace, CONFIG_FILE_NAME);
      try {
        await Deno.stat(local);
        config.ignored = local;
      } catch { /* none */ }
      return config;
    }
    throw new ConfigError(`Cannot read config file "${file}": ${(err as Error).message}`);
  }
  return parseConfig(text, file);
}
