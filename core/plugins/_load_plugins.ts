/**
 * Load plugin directories and packages the way corral does, each file in
 * its own sandbox, outside the CLI: for tests and for embedding corral.
 *
 * @module
 */
import { resolve } from "node:path";
import { type CorralConfig, emptyConfig, expandHome, loadPolicy } from "../config/mod.ts";
import {
  type LoadProblem,
  Registry,
  type RegistryOptions,
  type ToolInfo,
  type ToolsetSource,
} from "../registry/mod.ts";
import { Reporter } from "../tool/mod.ts";
import { pluginSources } from "./plugins.ts";

/** Options of {@link loadPlugins}. */
export interface LoadPluginsOptions extends Omit<RegistryOptions, "sources"> {
  /** File-drop directories to load (in order). */
  dirs?: string[];
  /** Package plugins to load after them. */
  packages?: string[];
  /** Per-plugin config sections (`services` of corral.json). */
  services?: Record<string, unknown>;
}

/** What {@link loadPlugins} gives back. */
export interface LoadedPlugins {
  /** The registry holding the plugins (close it when done). */
  registry: Registry;
  /** Rejected files and missing directories. */
  warnings: string[];
  /** The sources that were loaded. */
  sources: ToolsetSource[];
}

/**
 * Load plugin directories and packages the way corral does (each file in
 * its own sandbox), without the built-ins unless asked. For tests and
 * embedding; `cacheDir` defaults to `null` (no discovery cache).
 */
export async function loadPlugins(options: LoadPluginsOptions): Promise<LoadedPlugins> {
  const workspace = resolve(options.workspace ?? Deno.cwd());
  const policy = options.policy ?? await loadPolicy({ file: options.policyFile, workspace });
  const config: CorralConfig = {
    ...emptyConfig(workspace),
    toolDirs: (options.dirs ?? []).map((d) => resolve(workspace, expandHome(d))),
    plugins: options.packages ?? [],
    services: options.services ?? {},
    defaultPluginDir: false,
  };
  const found = await pluginSources({ policy, config, envDirs: null, workspace, defaultDir: null });
  const reporter = options.reporter ?? new Reporter();
  for (const w of found.warnings) reporter.line(`Warning: ${w}`, "yellow");
  const registry = await Registry.create({
    noBuiltins: true,
    cacheDir: null,
    ...options,
    workspace,
    policy,
    reporter,
    sources: found.sources,
    rejected: found.rejected,
  });
  return { registry, warnings: found.warnings, sources: found.sources };
}

/**
 * Load one plugin directory and return its tools, load problems and
 * warnings (the registry is closed again). Quiet by default.
 *
 * @example
 * ```ts ignore
 * import { loadPluginDir } from "./_load_plugins.ts";
 * const { tools, problems } = await loadPluginDir("/tmp/my-tools");
 * console.log(tools.map((t) => `${t.name}: ${t.status}`), problems);
 * ```
 */
export async function loadPluginDir(
  dir: string,
  options: Omit<LoadPluginsOptions, "dirs"> = {},
): Promise<{ tools: ToolInfo[]; problems: LoadProblem[]; warnings: string[] }> {
  const reporter = options.reporter ?? new Reporter({ quiet: true });
  const { registry, warnings } = await loadPlugins({ ...options, reporter, dirs: [dir] });
  try {
    return { tools: registry.list(), problems: [...registry.problems], warnings };
  } finally {
    await registry.close();
  }
}
