/**
 * Plugins: file-drop directories and installable packages, turned into
 * toolset sources without ever importing them in the host. Every plugin file
 * (and every package) is its own toolset with its own sandbox; the registry
 * imports it only inside that sandbox, with the grant permissions.json gives
 * the plugin (none by default), and calls `TOOL_SETUP` with only the
 * plugin's own `services.<name>` section of `corral.json`.
 *
 * Sources load in this order: built-ins, file-drop directories (the user's
 * `~/.config/corral/plugins/`, then `tool_dirs` of the config, then `CORRAL_TOOL_DIRS`), then
 * packages (`plugins` of the config). A later tool with the same name
 * replaces an earlier one, with a warning (see the registry).
 *
 * @module
 */
import {
  type CorralConfig,
  emptyConfig,
  type PluginDirSetting,
  pluginDirSettings,
  type PluginSet,
  pluginSet,
  type Policy,
} from "../config/mod.ts";
import type { NotLoaded, ToolsetSource } from "../registry/mod.ts";
import { confinement, type KnownImports, mapLimit } from "./plugin_files.ts";

export { defaultPluginDir, EXAMPLES_DIR, splitToolDirs, TOOL_DIRS_ENV } from "../config/mod.ts";
export { uniqueLabels } from "../config/mod.ts";

/** One file-drop directory and what its scan found. */
export interface PluginDir {
  /** The directory as declared (absolute). */
  dir: string;
  /** Its real path. */
  real: string;
  /** The short unique label used in toolset ids: `plugin:<label>/<stem>`. */
  label: string;
  /** Where it was declared: `default`, the config file, or `CORRAL_TOOL_DIRS`. */
  origin: string;
  /** Plugin files accepted (their real paths), sorted by name. */
  files: string[];
}

/** What {@link pluginSources} found. */
export interface PluginSources {
  /** File-drop plugins (directory order, then file name), then packages. */
  sources: ToolsetSource[];
  /** The directories scanned. */
  dirs: PluginDir[];
  /** Rejected files and missing directories, one line each. */
  warnings: string[];
  /** The rejected files, each with its line of `warnings` (a call of a name they may define says why). */
  rejected: NotLoaded[];
}

/** Options of {@link pluginSources}. */
export interface PluginSourceOptions {
  /** The policy giving each plugin its grant (`policy.plugin(id, name)`). */
  policy: Policy;
  /** The loaded `corral.json` (default: none). */
  config?: CorralConfig;
  /**
   * The directories to scan, as the settings decided them
   * (core/config/settings.ts); default: decided here from the options below.
   */
  dirs?: PluginDirSetting[];
  /** Value of `CORRAL_TOOL_DIRS`; default: read from the environment. `null`: ignore it. */
  envDirs?: string | null;
  /** Directory relative `CORRAL_TOOL_DIRS` entries resolve against (default: cwd). */
  workspace?: string;
  /** Directory relative `CORRAL_TOOL_DIRS` entries resolve against (default: `workspace`). */
  envBase?: string;
  /** The user's plugins directory; `null` leaves it out (default {@link defaultPluginDir}). */
  defaultDir?: string | null;
  /** Also load corral's examples ({@link EXAMPLES_DIR}) after it: `corral demo`. */
  examples?: boolean;
}

/**
 * Turn the file-drop directories and packages of the config into toolset
 * sources, in load order, without importing anything. Files that escape
 * their directory through a symlink (or import files outside it) are
 * rejected with a warning.
 */
export async function pluginSources(options: PluginSourceOptions): Promise<PluginSources> {
  const config = options.config ?? emptyConfig(options.workspace);
  const dirs = options.dirs ?? pluginDirSettings(config, {
    envDirs: options.envDirs,
    envBase: options.envBase ?? options.workspace ?? Deno.cwd(),
    defaultDir: options.defaultDir,
    examples: options.examples,
  });
  return await confinePlugins(await pluginSet(options.policy, config, dirs));
}

/**
 * The plugins the settings name (core/config/plugin_set.ts) that stay
 * inside their folder, as toolset sources in load order; each rejected one
 * is a warning line naming it and why. `known`: the imports the discovery
 * cache remembers of unchanged files (then those are not read again).
 */
export async function confinePlugins(set: PluginSet, known?: KnownImports): Promise<PluginSources> {
  const warnings = [...set.warnings];
  const rejected: NotLoaded[] = [];
  // Checked concurrently (a start with many plugins stays fast); results keep the order.
  const verdicts = await mapLimit(set.candidates, 32, (c) => confinement(c, known));
  const sources: ToolsetSource[] = [];
  const files = new Map<string, string[]>();
  for (const [i, c] of set.candidates.entries()) {
    const verdict = verdicts[i];
    if (verdict === "skip") continue;
    if (verdict) {
      const message = c.kind === "package"
        ? `package plugin ${c.id.slice("package:".length)} rejected: ${verdict}`
        : `rejected ${c.path}: ${verdict}`;
      warnings.push(message);
      if (c.kind === "plugin") rejected.push({ source: c.path, message });
      continue;
    }
    sources.push({
      id: c.id,
      kind: c.kind,
      modules: [c.module],
      policy: c.policy,
      config: c.config,
      ...(c.kind === "package" ? { imports: c.imports ?? [] } : {}),
    });
    if (c.root && c.kind === "plugin") files.set(c.root, [...files.get(c.root) ?? [], c.module]);
  }
  const dirs = set.dirs.map((d) => ({ ...d, files: files.get(d.real) ?? [] }));
  return { sources, dirs, warnings, rejected };
}
