/**
 * Which plugins the settings name: every plugin file of the file-drop
 * directories (core/config/plugin_dirs.ts) and every package of
 * corral.json's `plugins`, in load order, each with its toolset id, its
 * policy (`plugins.<name>`, else `plugins.default`) and its config section
 * (`services.<name>`). Nothing is imported, and nothing is judged here:
 * whether a file and what it imports stay inside its folder is checked by
 * the plugin floor (core/plugins/plugins.ts) before any sandbox sees it.
 *
 * @module
 */
import { basename, dirname, extname, join, resolve, sep } from "node:path";
import { ConfigError } from "../tool/mod.ts";
import type { CorralConfig } from "./corral_config.ts";
import { expandHome } from "./env_var.ts";
import type { PluginDirSetting } from "./plugin_dirs.ts";
import type { Policy, SandboxPolicy } from "./policy.ts";

/** One plugin the settings name, before its confinement is checked. */
export interface PluginCandidate {
  /** `plugin:<label>/<stem>` or `package:<specifier>`. */
  id: string;
  kind: "plugin" | "package";
  /** The module: a file's real path, or a remote package's specifier. */
  module: string;
  /** As found in its directory (for messages), or the specifier. */
  path: string;
  /** The folder it and its local imports must stay inside (none for a remote package). */
  root?: string;
  /** A symlink in its directory (its target is `module`). */
  link?: boolean;
  policy: SandboxPolicy;
  /** Its `services.<name>` section. */
  config?: unknown;
  /** Hosts its remote code is imported from. */
  imports?: string[];
}

/** One file-drop directory that exists. */
export interface PluginDirFound {
  /** The directory as declared (absolute). */
  dir: string;
  /** Its real path. */
  real: string;
  /** The short unique label used in toolset ids: `plugin:<label>/<stem>`. */
  label: string;
  /** Where it was declared: `default`, the config file, or `CORRAL_TOOL_DIRS`. */
  origin: string;
}

/** What {@link pluginSet} found. */
export interface PluginSet {
  candidates: PluginCandidate[];
  dirs: PluginDirFound[];
  /** Missing directories, unresolvable links, missing local packages: one line each. */
  warnings: string[];
}

/**
 * The plugins of `dirs` and of `config`'s packages, with their policies.
 * A local package that is a folder, not a module file, is a
 * {@link ConfigError} naming the entry.
 */
export async function pluginSet(
  policy: Policy,
  config: Pick<CorralConfig, "plugins" | "services" | "baseDir" | "packageBase" | "file">,
  dirs: PluginDirSetting[],
): Promise<PluginSet> {
  const warnings: string[] = [];
  // Resolved and de-duplicated: the same real directory is scanned once.
  const found: Array<{ dir: string; real: string; origin: string }> = [];
  for (const d of dirs) {
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
    if (!found.some((f) => f.real === real)) found.push({ dir: d.dir, real, origin: d.origin });
  }
  const labels = uniqueLabels(found.map((f) => f.dir));
  const candidates: PluginCandidate[] = [];
  for (const [i, f] of found.entries()) {
    for (const file of await dirPluginFiles(f.dir, f.real, warnings)) {
      const stem = stemOf(basename(file.path));
      const id = `plugin:${labels[i]}/${stem}`;
      candidates.push({
        id,
        kind: "plugin",
        ...file,
        root: f.real,
        policy: policy.plugin(id, stem),
        config: config.services[stem],
      });
    }
  }
  for (const [i, spec] of config.plugins.entries()) {
    const where = `${config.file ?? "corral.json"}: plugins[${i}] "${spec}"`;
    const pkg = await _package(spec, config, where, warnings);
    if (!pkg) continue;
    const name = packageName(spec);
    const id = `package:${spec}`;
    candidates.push({
      id,
      kind: "package",
      ...pkg,
      policy: policy.plugin(id, name),
      config: config.services[name],
      imports: importHosts(spec),
    });
  }
  return {
    candidates,
    dirs: found.map((f, i) => ({ ...f, label: labels[i] })),
    warnings,
  };
}

/**
 * The plugin files of one directory (`real` its real path), sorted by name:
 * each module's real path, the path as found, whether it is a symlink. A
 * link that cannot be resolved is a warning in `warnings`.
 */
export async function dirPluginFiles(
  dir: string,
  real: string,
  warnings: string[],
): Promise<Array<{ module: string; path: string; link?: boolean }>> {
  const names: Array<{ name: string; link: boolean }> = [];
  // Sync: one call for the whole listing, where the async form pays a trip per batch.
  for (const e of Deno.readDirSync(dir)) {
    if ((e.isFile || e.isSymlink) && isPluginFileName(e.name)) {
      names.push({ name: e.name, link: e.isSymlink });
    }
  }
  names.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const out: Array<{ module: string; path: string; link?: boolean }> = [];
  for (const { name, link } of names) {
    const path = join(dir, name);
    // A plain file in a real directory is its own real path.
    if (!link) {
      out.push({ module: join(real, name), path });
      continue;
    }
    try {
      out.push({ module: await Deno.realPath(path), path, link: true });
    } catch (err) {
      warnings.push(`rejected ${path}: cannot resolve it (${errorReason(err)})`);
    }
  }
  return out;
}

/** A package's module: its specifier when remote, else its file's real path and folder. */
async function _package(
  spec: string,
  config: Pick<CorralConfig, "baseDir" | "packageBase">,
  where: string,
  warnings: string[],
): Promise<{ module: string; path: string; root?: string } | undefined> {
  if (isRemoteSpecifier(spec)) return { module: spec, path: spec };
  const path = resolve(
    config.packageBase?.[spec] ?? config.baseDir,
    expandHome(spec.startsWith("file://") ? new URL(spec).pathname : spec),
  );
  let module: string;
  try {
    module = await Deno.realPath(path);
  } catch (err) {
    warnings.push(`package plugin ${spec} skipped: ${path}: ${errorReason(err)}`);
    return undefined;
  }
  if (!(await Deno.stat(module)).isFile) {
    throw new ConfigError(
      `${where}: ${path} is not a module file (a package given as a path names its entry ` +
        `file, e.g. ${join(spec, "mod.ts")}; a folder of plugins goes in "tool_dirs")`,
    );
  }
  return { module, path, root: dirname(module) };
}

/**
 * Whether a file name is a plugin module: `.ts`, `.js` or `.mjs` (not
 * `.d.ts`), not starting with `_`, not `*_test.*`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isPluginFileName } from "./plugin_set.ts";
 * assert.ok(isPluginFileName("weather.ts") && !isPluginFileName("_helper.ts"));
 * assert.ok(!isPluginFileName("weather_test.ts") && !isPluginFileName("types.d.ts"));
 * ```
 */
export function isPluginFileName(name: string): boolean {
  if (!/\.(ts|js|mjs)$/.test(name) || name.endsWith(".d.ts")) return false;
  return !name.startsWith("_") && !/_test\.(ts|js|mjs)$/.test(name);
}

/** The file name without its extension: the plugin's name. */
export function stemOf(name: string): string {
  return basename(name, extname(name));
}

/** Why a file operation failed, in a few words (`not found`, or the error's message). */
export function errorReason(err: unknown): string {
  if (err instanceof Deno.errors.NotFound) return "not found";
  return err instanceof Error ? err.message : String(err);
}

/**
 * Short unique labels for directories: the basename, lengthened with parent
 * names until every label is unique (`plugins`, `a/tools`, `b/tools`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { uniqueLabels } from "./plugin_set.ts";
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

/**
 * The plugin name of a package specifier or path: the npm/jsr package name,
 * or the file stem (the directory name for `mod.ts`/`index.ts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { packageName } from "./plugin_set.ts";
 * assert.ok(packageName("npm:@acme/weather@1.2.0/tools") === "@acme/weather");
 * assert.ok(packageName("jsr:@acme/dice@^1") === "@acme/dice");
 * assert.ok(packageName("./vendor/stocks/mod.ts") === "stocks");
 * ```
 */
export function packageName(spec: string): string {
  const m = /^(?:npm|jsr):\/?(@[^/@]+\/[^/@]+|[^/@]+)/.exec(spec);
  if (m) return m[1];
  let path = spec;
  if (/^https?:/.test(spec)) {
    try {
      path = new URL(spec).pathname;
    } catch { /* keep as is */ }
  }
  const stem = stemOf(basename(path));
  return ["mod", "index", "main"].includes(stem) ? basename(dirname(path)) || stem : stem;
}

/** Whether a package specifier is remote (`npm:`, `jsr:`, `http(s):`) rather than a local path. */
export function isRemoteSpecifier(spec: string): boolean {
  return /^(npm|jsr|https?):/.test(spec);
}

/**
 * The hosts a remote package's code is imported from: the host of an
 * `https:`/`http:` specifier, `jsr.io` for `jsr:`; none for `npm:` and paths.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { importHosts } from "./plugin_set.ts";
 * assert.ok(importHosts("https://example.com:8443/mod.ts")[0] === "example.com:8443");
 * ```
 */
export function importHosts(spec: string): string[] {
  if (spec.startsWith("jsr:")) return ["jsr.io"];
  if (/^https?:/.test(spec)) {
    try {
      return [new URL(spec).host];
    } catch {
      return [];
    }
  }
  return [];
}
