/**
 * corral's settings, resolved once: the policy (`permissions.json`) and the
 * config (`corral.json`), each merged by key from its layers, lowest first
 * (core/config/layers.ts):
 *
 * 1. shipped: corral's own `permissions.json` (the config has defaults only);
 * 2. user: corral's config directory (`~/.config/corral`, `CORRAL_CONFIG_DIR`);
 * 3. project: the workspace's files, once `corral trust` recorded them
 *    (core/config/project_trust.ts); an untrusted one is ignored, named;
 * 4. flags: `--permissions FILE`, `--config FILE`, then `--audit PATH`,
 *    `--toolset NAME`, `--audit-max-bytes N` and `--shared-state URL` of
 *    the command line.
 *
 * The result, one {@link Settings} object with the file each value came
 * from, is what every floor above takes: nothing above reads a settings
 * file or resolves a setting again. `corral config` prints it.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { ConfigError } from "../tool/mod.ts";
import { CONFIG_ADD_UP, configLayer, type CorralConfig, layeredConfig } from "./corral_config.ts";
import { configDir } from "./install_dir.ts";
import {
  type LayerRole,
  mergeLayers,
  settingEntries,
  type SettingEntry,
  type SettingsLayer,
} from "./layers.ts";
import { type PluginDirSetting, pluginDirSettings } from "./plugin_dirs.ts";
import { type PluginSet, pluginSet } from "./plugin_set.ts";
import {
  layeredPolicy,
  type Policy,
  POLICY_ADD_UP,
  policyLayer,
  SHIPPED_POLICY,
} from "./policy.ts";
import { projectFile } from "./project_trust.ts";

/** What the command line says (paths absolute, the workspace checked by the caller). */
export interface SettingsFlags {
  /** The workspace: an existing folder's real path. */
  workspace: string;
  /** How it was chosen, for `corral config`: `--workspace`, `the current folder`, … */
  workspaceFrom?: string;
  /** `--permissions FILE`. */
  permissions?: string;
  /** `--config FILE`. */
  config?: string;
  /** `--audit PATH`. */
  audit?: string;
  /** `--audit-max-bytes N`: the audit log's total with its rotated files. */
  auditMaxBytes?: number;
  /** `--shared-state URL`: the Redis replicas share limits through. */
  sharedState?: string;
  /** `--toolset NAME` (repeatable). */
  toolsets?: string[];
  /** The letters given (`-r -w -x -n`); empty or absent: none given, so all. */
  letters?: string;
  /** `--no-cache`. */
  noCache?: boolean;
  /** `corral demo`: corral's example plugins load too. */
  examples?: boolean;
  /** Where relative `CORRAL_TOOL_DIRS` entries resolve (the folder the user typed them in). */
  envBase?: string;
  /** corral's config directory (default {@link configDir}). */
  configDir?: string;
}

/** One settings file that was looked for, and what became of it. */
export interface SettingsFile {
  kind: "permissions.json" | "corral.json";
  role: LayerRole;
  file: string;
  /** `used`; `absent`; `untrusted` (a project file not trusted yet: ignored). */
  state: "used" | "absent" | "untrusted";
}

/** Every setting in effect, resolved once, with where each came from. */
export interface Settings {
  /** The workspace (real path) and how it was chosen. */
  workspace: string;
  workspaceFrom: string;
  /** The letters the host grants tools (`rwxn` when none was given). */
  letters: string;
  /** Whether `-r -w -x -n` were given (none given: all, with a warning). */
  lettersGiven: boolean;
  /** The merged policy (its `files`, `editFile` and `origin()` say where each grant is). */
  policy: Policy;
  /** The merged config, `--audit` and `--toolset` included. */
  config: CorralConfig;
  /** On-demand built-in toolsets to load (corral.json `toolsets` and `--toolset`). */
  toolsets: string[];
  /** The audit log (absolute), or null: off. */
  audit: string | null;
  /** The file-drop directories, in load order, each with its origin. */
  pluginDirs: PluginDirSetting[];
  /**
   * The plugins these directories and corral.json's packages hold, with their
   * policies (their confinement is checked above: core/plugins/plugins.ts).
   */
  plugins: PluginSet;
  /** Whether the discovery cache is used (not with `--no-cache`). */
  cache: boolean;
  /** Every settings file looked for, lowest layer first. */
  files: SettingsFile[];
  /** Project files present but not trusted, with the flag that would take one anyway. */
  ignored: Array<{ file: string; flag: string }>;
  /** Every setting of each file kind with the files it came from (`corral config`). */
  entries: { permissions: SettingEntry[]; config: SettingEntry[] };
}

const _CONFIG_DEFAULTS: SettingsLayer = {
  file: "corral's default",
  role: "shipped",
  data: { default_plugin_dir: true, audit_required: true },
};

/**
 * Resolve every setting once, from the files of each layer and the flags.
 * Throws a {@link ConfigError} naming the file (and key path) of a problem.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveSettings } from "./settings.ts";
 * const dir = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${dir}/permissions.json`, '{"toolsets":{"net":{"net":["example.com"]}}}');
 * const s = await resolveSettings({ workspace: dir, configDir: dir, letters: "r" });
 * assert.deepEqual(s.policy.toolset("net").net, ["example.com"]);
 * assert.deepEqual(s.policy.toolset("files").read, [dir]); // the shipped "." kept, key by key
 * assert.equal(s.policy.origin("toolsets.net.net"), `${dir}/permissions.json`);
 * assert.ok(s.policy.origin("toolsets.files.read").endsWith("/permissions.json"));
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function resolveSettings(flags: SettingsFlags): Promise<Settings> {
  const { workspace } = flags;
  const userDir = flags.configDir ?? configDir();
  const files: SettingsFile[] = [];
  const ignored: Settings["ignored"] = [];
  const policyLayers = [await policyLayer(SHIPPED_POLICY, "shipped")];
  files.push({ kind: "permissions.json", role: "shipped", file: SHIPPED_POLICY, state: "used" });
  const configLayers: SettingsLayer[] = [];
  for (const kind of ["permissions.json", "corral.json"] as const) {
    const layers = kind === "permissions.json" ? policyLayers : configLayers;
    await _fileLayers(kind, flags, userDir, { layers, files, ignored });
  }
  const extra = _flagLayers(flags);
  // The file to edit: the highest of --permissions, the trusted project's, the user's.
  const editFile = policyLayers.length > 1
    ? policyLayers.at(-1)!.file
    : join(userDir, "permissions.json");
  const policy = layeredPolicy(policyLayers, workspace, editFile);
  const config = _withFlags(layeredConfig(configLayers, workspace), extra);
  const letters = flags.letters ?? "";
  const pluginDirs = pluginDirSettings(config, {
    envBase: flags.envBase ?? workspace,
    examples: flags.examples,
  });
  return {
    workspace,
    workspaceFrom: flags.workspaceFrom ?? "--workspace",
    letters: letters || "rwxn",
    lettersGiven: letters !== "",
    policy,
    config,
    toolsets: config.toolsets,
    audit: config.audit,
    pluginDirs,
    plugins: await pluginSet(policy, config, pluginDirs),
    cache: !flags.noCache,
    files,
    ignored,
    entries: {
      permissions: settingEntries(mergeLayers(policyLayers, POLICY_ADD_UP)),
      config: settingEntries(
        mergeLayers([_CONFIG_DEFAULTS, ...configLayers, ...extra], CONFIG_ADD_UP),
      ),
    },
  };
}

/** The layers of one kind of settings file: the user's, the trusted project's, the flag's. */
async function _fileLayers(
  kind: "permissions.json" | "corral.json",
  flags: SettingsFlags,
  userDir: string,
  out: { layers: SettingsLayer[]; files: SettingsFile[]; ignored: Settings["ignored"] },
): Promise<void> {
  const { workspace } = flags;
  const { layers, files, ignored } = out;
  const read = kind === "permissions.json" ? policyLayer : configLayer;
  const flagFile = kind === "permissions.json" ? flags.permissions : flags.config;
  const user = join(userDir, kind);
  const seen = new Set<string>(flagFile ? [_real(flagFile)] : []);
  const userState = seen.has(_real(user)) ? "absent" : await _fileState(user);
  if (userState === "used") layers.push(await read(user, "user"));
  files.push({ kind, role: "user", file: user, state: userState });
  seen.add(_real(user));
  const project = join(workspace, kind);
  if (!seen.has(_real(project))) {
    const p = await projectFile(workspace, kind);
    if (p.state === "trusted") layers.push(await read(p.file, "project", p.text));
    if (p.state === "untrusted") {
      ignored.push({ file: p.file, flag: kind === "corral.json" ? "--config" : "--permissions" });
    }
    const state = p.state === "trusted" ? "used" : p.state;
    files.push({ kind, role: "project", file: project, state });
  }
  if (flagFile) {
    layers.push(await read(resolve(flagFile), "flag"));
    files.push({ kind, role: "flag", file: resolve(flagFile), state: "used" });
  }
}

/** The command line's settings: `--audit`, `--toolset`, `--audit-max-bytes`, `--shared-state`. */
function _flagLayers(flags: SettingsFlags): SettingsLayer[] {
  const extra: SettingsLayer[] = [];
  if (flags.audit) {
    extra.push({ file: "--audit", role: "flag", data: { audit: resolve(flags.audit) } });
  }
  if (flags.toolsets?.length) {
    extra.push({ file: "--toolset", role: "flag", data: { toolsets: [...flags.toolsets] } });
  }
  if (flags.auditMaxBytes !== undefined) {
    extra.push({
      file: "--audit-max-bytes",
      role: "flag",
      data: { audit_max_bytes: flags.auditMaxBytes },
    });
  }
  if (flags.sharedState !== undefined) {
    extra.push({ file: "--shared-state", role: "flag", data: { shared_state: flags.sharedState } });
  }
  return extra;
}

/**
 * The config with the command line's `--audit`, `--toolset`,
 * `--audit-max-bytes` and `--shared-state` over it.
 */
function _withFlags(config: CorralConfig, extra: SettingsLayer[]): CorralConfig {
  const out = { ...config };
  for (const l of extra) {
    if (typeof l.data.audit === "string") out.audit = l.data.audit;
    if (typeof l.data.audit_max_bytes === "number") out.auditMaxBytes = l.data.audit_max_bytes;
    if (typeof l.data.shared_state === "string") out.sharedState = l.data.shared_state;
    if (Array.isArray(l.data.toolsets)) {
      out.toolsets = [...new Set([...out.toolsets, ...l.data.toolsets as string[]])];
    }
  }
  return out;
}

async function _fileState(path: string): Promise<"used" | "absent"> {
  try {
    const st = await Deno.stat(path);
    // An empty folder a sandbox's mount left counts as absent, as for project files.
    return st.isFile ? "used" : "absent";
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return "absent";
    throw new ConfigError(`Cannot read ${path}: ${(err as Error).message}`);
  }
}

function _real(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return resolve(path);
  }
}
