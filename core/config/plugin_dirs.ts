/**
 * The file-drop directories corral loads plugins from, in load order, each
 * with where it was set: the user's own (`plugins/` in corral's config
 * directory, unless `default_plugin_dir` is false), corral's examples (only
 * for `corral demo`), `tool_dirs` of corral.json, then `CORRAL_TOOL_DIRS`.
 * Decided here once; the plugin scan (core/plugins/plugins.ts) and
 * `corral new` take this list.
 *
 * @module
 */
import { join, resolve } from "node:path";
import type { CorralConfig } from "./corral_config.ts";
import { envVar, expandHome } from "./env_var.ts";
import { configDir, INSTALL_DIR } from "./install_dir.ts";

/** The environment variable listing more file-drop directories, colon-separated. */
export const TOOL_DIRS_ENV = "CORRAL_TOOL_DIRS";

/**
 * corral's example plugins (RollDice, Greet, ChangeCase, Slugify): loaded by
 * `corral demo`, or when the user names the folder (`tool_dirs`,
 * `CORRAL_TOOL_DIRS`); never offered to an agent nobody chose them for.
 */
export const EXAMPLES_DIR: string = join(INSTALL_DIR, "plugins");

/**
 * The user's own file-drop directory, loaded by default (before the
 * configured ones): `plugins/` in corral's config directory
 * (`~/.config/corral/plugins`). Part of the trust base like the directory
 * around it.
 */
export function defaultPluginDir(): string {
  return join(configDir(), "plugins");
}

/**
 * The directories of a `CORRAL_TOOL_DIRS`-style value (colon-separated, like
 * PATH; empty parts ignored; `~` expanded; relative to `base`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { splitToolDirs } from "./plugin_dirs.ts";
 * assert.ok(splitToolDirs("a::/b", "/w").join(",") === "/w/a,/b");
 * ```
 */
export function splitToolDirs(value: string | undefined, base: string): string[] {
  if (!value) return [];
  return value.split(":").filter((p) => p.trim() !== "").map((p) => resolve(base, expandHome(p)));
}

/** One file-drop directory to scan, and where it was set. */
export interface PluginDirSetting {
  /** The directory (absolute, as declared). */
  dir: string;
  /** Where it was set: `default`, `corral demo`, `<file> tool_dirs`, or `CORRAL_TOOL_DIRS`. */
  origin: string;
  /** A missing one is no warning (the default directory). */
  quiet: boolean;
}

/** What decides the plugin directories besides the config. */
export interface PluginDirOptions {
  /** Value of `CORRAL_TOOL_DIRS`; default: read from the environment. `null`: ignore it. */
  envDirs?: string | null;
  /** Where relative `CORRAL_TOOL_DIRS` entries resolve (the folder the user typed them in). */
  envBase: string;
  /** The user's plugins directory; `null` leaves it out (default {@link defaultPluginDir}). */
  defaultDir?: string | null;
  /** Also corral's examples ({@link EXAMPLES_DIR}) after it: `corral demo`. */
  examples?: boolean;
}

/**
 * The plugin directories of `config`, in load order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { emptyConfig } from "./corral_config.ts";
 * import { pluginDirSettings } from "./plugin_dirs.ts";
 * const config = { ...emptyConfig("/w"), toolDirs: ["/t"], file: "/c/corral.json" };
 * const dirs = pluginDirSettings(config, { envDirs: "e", envBase: "/w", defaultDir: "/d" });
 * assert.deepEqual(dirs.map((d) => d.dir), ["/d", "/t", "/w/e"]);
 * assert.equal(dirs[1].origin, "/c/corral.json tool_dirs");
 * ```
 */
export function pluginDirSettings(
  config: Pick<CorralConfig, "defaultPluginDir" | "toolDirs" | "file" | "toolDirFrom">,
  options: PluginDirOptions,
): PluginDirSetting[] {
  const dirs: PluginDirSetting[] = [];
  const defaultDir = options.defaultDir === undefined ? defaultPluginDir() : options.defaultDir;
  if (defaultDir && config.defaultPluginDir) {
    dirs.push({ dir: resolve(defaultDir), origin: "default", quiet: true });
  }
  if (options.examples) dirs.push({ dir: EXAMPLES_DIR, origin: "corral demo", quiet: false });
  for (const dir of config.toolDirs) {
    const from = config.toolDirFrom?.[dir] ?? config.file ?? "corral.json";
    dirs.push({ dir, origin: `${from} tool_dirs`, quiet: false });
  }
  const env = options.envDirs === undefined ? envVar(TOOL_DIRS_ENV) : options.envDirs;
  for (const dir of splitToolDirs(env ?? undefined, options.envBase)) {
    dirs.push({ dir, origin: TOOL_DIRS_ENV, quiet: false });
  }
  return dirs;
}
