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
import { resolve, sep } from "node:path";
import { type CorralConfig, emptyConfig } from "../config/corral_config.ts";
import { type PluginDirSetting, pluginDirSettings } from "../config/plugin_dirs.ts";
import type { Policy } from "../config/policy.ts";
import type { ToolsetSource } from "../registry/catalog.ts";
import { packageSource } from "./packages.ts";
import { errorReason, scanPluginDir } from "./plugin_files.ts";

export {
  defaultPluginDir,
  EXAMPLES_DIR,
  splitToolDirs,
  TOOL_DIRS_ENV,
} from "../config/plugin_dirs.ts";

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
  const warnings: string[] = [];
  const declared = options.dirs ?? pluginDirSettings(config, {
    envDirs: options.envDirs,
    envBase: options.envBase ?? options.workspace ?? Deno.cwd(),
    defaultDir: options.defaultDir,
    examples: options.examples,
  });

  // Resolve and de-duplicate (the same real directory is scanned once).
  const found: Array<{ dir: string; real: string; origin: string }> = [];
  for (const d of declared) {
    let real: string;
    try {
      real = await Deno.realPath(d.dir);
      if (!(await Deno.stat(real)).isDirectory) throw new Error("not a directory");
    } catch (err) {
      if (!d.quiet) {
        warnings.push(`plugin directory ${d.dir} (from ${d.origin}) skipped: ${errorReason(err)}`);
      }
      continue;
    }
    if (found.some((f) => f.real === real)) continue;
    found.push({ dir: d.dir, real, origin: d.origin });
  }
  const labels = uniqueLabels(found.map((f) => f.dir));

  const dirs: PluginDir[] = [];
  const sources: ToolsetSource[] = [];
  for (const [i, f] of found.entries()) {
    const scan = await scanPluginDir(f.dir);
    warnings.push(...scan.rejected);
    dirs.push({ dir: f.dir, real: f.real, label: labels[i], origin: f.origin, files: scan.files });
    for (const { file, stem } of scan.entries) {
      const id = `plugin:${labels[i]}/${stem}`;
      sources.push({
        id,
        kind: "plugin",
        modules: [file],
        policy: options.policy.plugin(id, stem),
        config: config.services[stem],
      });
    }
  }

  for (const [i, spec] of config.plugins.entries()) {
    const pkg = await packageSource(
      spec,
      config,
      options.policy,
      `${config.file ?? "corral.json"}: plugins[${i}] "${spec}"`,
    );
    if (typeof pkg === "string") warnings.push(pkg);
    else sources.push(pkg);
  }
  return { sources, dirs, warnings };
}

/**
 * Short unique labels for directories: the basename, lengthened with parent
 * names until every label is unique (`plugins`, `a/tools`, `b/tools`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { uniqueLabels } from "./plugins.ts";
 * assert.ok(uniqueLabels(["/x/a/tools", "/y/b/tools", "/z/p"]).join() === "a/tools,b/tools,p");
 * ```
 */
export function uniqueLabels(dirs: string[]): string[] {
  const parts = dirs.map((d) => resolve(d).split(sep).filter(Boolean));
  const depth = dirs.map(() => 1);
  for (let round = 0; round < 64; round++) {
    const labels = parts.map((p, i) => p.slice(-depth[i]).join("/") || "/");
    let changed = false;
    for (let i = 0; i < labels.length; i++) {
      const clash = labels.some((l, j) => j !== i && l === labels[i]);
      if (clash && depth[i] < parts[i].length) {
        depth[i]++;
        changed = true;
      }
    }
    if (!changed) return labels.map((l, i) => labels.indexOf(l) === i ? l : `${l}~${i + 1}`);
  }
  return parts.map((p) => p.join("/"));
}
