/**
 * Plugins: file-drop directories and installable packages, turned into
 * toolset sources without ever importing them in the host. Every plugin file
 * (and every package) is its own toolset with its own sandbox; the registry
 * imports it only inside that sandbox, with the grant permissions.json gives
 * the plugin (none by default), and calls `TOOL_SETUP` with only the
 * plugin's own `services.<name>` section of `corral.json`.
 *
 * Sources load in this order: built-ins, file-drop directories (corral's
 * `plugins/`, then `tool_dirs` of the config, then `CORRAL_TOOL_DIRS`), then
 * packages (`plugins` of the config). A later tool with the same name
 * replaces an earlier one, with a warning (see the registry).
 *
 * @module
 */
import { basename, dirname, extname, join, resolve, sep } from "node:path";
import { z } from "zod";
import { ConfigError } from "../tool/errors.ts";
import { localModuleGraph } from "../sandbox/module_graph.ts";
import { loadPolicy, parseJsonConfig, type Policy } from "../config/policy.ts";
import {
  type LoadProblem,
  Registry,
  type RegistryOptions,
  type ToolInfo,
  type ToolsetSource,
} from "../registry/registry.ts";
import { Reporter } from "../tool/reporter.ts";
import { isInside } from "../guard/paths.ts";

const _ROOT = resolve(new URL("../..", import.meta.url).pathname);
const _CORE = resolve(new URL("..", import.meta.url).pathname);

/** corral's own file-drop directory, loaded by default (before the configured ones). */
export const DEFAULT_PLUGIN_DIR: string = join(_ROOT, "plugins");

/** The name of the config file looked up in the working directory. */
export const CONFIG_FILE_NAME = "corral.json";

/** The environment variable listing more file-drop directories, colon-separated. */
export const TOOL_DIRS_ENV = "CORRAL_TOOL_DIRS";

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
    .describe("Load corral's own plugins/ directory (default true)"),
  audit: z.string().min(1, "must not be empty").optional()
    .describe("Append one JSON line per call to this file (like --audit)"),
}).strict();

/** The validated `corral.json`, with directories and local paths made absolute. */
export interface CorralConfig {
  /** The file it came from, or null when there is none. */
  file: string | null;
  /** File-drop directories from `tool_dirs`, absolute, in order. */
  toolDirs: string[];
  /** Package plugins from `plugins`, as written. */
  plugins: string[];
  /** Per-plugin sections: `services.<plugin name>`. */
  services: Record<string, unknown>;
  /** On-demand built-in toolsets to load. */
  toolsets: string[];
  /** Whether corral's own `plugins/` directory loads. */
  defaultPluginDir: boolean;
  /** The directory relative paths of the config resolve against. */
  baseDir: string;
  /** The audit log from `audit` (absolute), or null: off unless `--audit` is given. */
  audit: string | null;
}

/** An empty config (no file): only corral's own `plugins/` directory. */
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
  };
}

/**
 * Validate `corral.json` text. Throws a {@link ConfigError} naming the file
 * and the key path of every problem (`corral.json: tool_dirs[1]: Expected string, received number`).
 *
 * @example
 * ```ts
 * import { parseConfig } from "./plugins.ts";
 * const c = parseConfig('{"tool_dirs": ["tools"], "services": {"weather": {"key": "k"}}}', "/srv/corral.json");
 * console.assert(c.toolDirs[0] === "/srv/tools" && c.services.weather !== undefined);
 * ```
 */
export function parseConfig(text: string, file: string): CorralConfig {
  const d = parseJsonConfig(text, file, _configSchema);
  const baseDir = dirname(resolve(file));
  return {
    file: resolve(file),
    toolDirs: (d.tool_dirs ?? []).map((p) => resolve(baseDir, expandHome(p))),
    plugins: d.plugins ?? [],
    services: d.services ?? {},
    toolsets: d.toolsets ?? [],
    defaultPluginDir: d.default_plugin_dir ?? true,
    baseDir,
    audit: d.audit ? resolve(baseDir, expandHome(d.audit)) : null,
  };
}

/**
 * Load the config: `file` when given (it must exist), else `corral.json` in
 * `workspace` when present, else an empty config.
 */
export async function loadConfig(
  options: { file?: string; workspace?: string } = {},
): Promise<CorralConfig> {
  const workspace = resolve(options.workspace ?? Deno.cwd());
  const file = options.file ? resolve(expandHome(options.file)) : join(workspace, CONFIG_FILE_NAME);
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (err) {
    if (!options.file && err instanceof Deno.errors.NotFound) return emptyConfig(workspace);
    throw new ConfigError(`Cannot read config file "${file}": ${(err as Error).message}`);
  }
  return parseConfig(text, file);
}

/** `~` and `~/x` → the home directory (other paths unchanged). */
export function expandHome(path: string): string {
  if (path !== "~" && !path.startsWith("~/")) return path;
  const home = _env("HOME");
  return home ? home + path.slice(1) : path;
}

/**
 * The directories of a `CORRAL_TOOL_DIRS`-style value (colon-separated, like
 * PATH; empty parts ignored; `~` expanded; relative to `base`).
 *
 * @example
 * ```ts
 * import { splitToolDirs } from "./plugins.ts";
 * console.assert(splitToolDirs("a::/b", "/w").join(",") === "/w/a,/b");
 * ```
 */
export function splitToolDirs(value: string | undefined, base: string): string[] {
  if (!value) return [];
  return value.split(":").filter((p) => p.trim() !== "").map((p) => resolve(base, expandHome(p)));
}

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
  /** Value of `CORRAL_TOOL_DIRS`; default: read from the environment. `null`: ignore it. */
  envDirs?: string | null;
  /** Directory relative `CORRAL_TOOL_DIRS` entries resolve against (default: cwd). */
  workspace?: string;
  /** corral's own plugins directory; `null` leaves it out (default {@link DEFAULT_PLUGIN_DIR}). */
  defaultDir?: string | null;
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
  const declared: Array<{ dir: string; origin: string; quiet: boolean }> = [];
  const defaultDir = options.defaultDir === undefined ? DEFAULT_PLUGIN_DIR : options.defaultDir;
  if (defaultDir && config.defaultPluginDir) {
    declared.push({ dir: resolve(defaultDir), origin: "default", quiet: true });
  }
  for (const dir of config.toolDirs) {
    declared.push({ dir, origin: `${config.file ?? CONFIG_FILE_NAME} tool_dirs`, quiet: false });
  }
  const envValue = options.envDirs === undefined ? _env(TOOL_DIRS_ENV) : options.envDirs;
  for (const dir of splitToolDirs(envValue ?? undefined, options.workspace ?? Deno.cwd())) {
    declared.push({ dir, origin: TOOL_DIRS_ENV, quiet: false });
  }

  // Resolve and de-duplicate (the same real directory is scanned once).
  const found: Array<{ dir: string; real: string; origin: string }> = [];
  for (const d of declared) {
    let real: string;
    try {
      real = await Deno.realPath(d.dir);
      if (!(await Deno.stat(real)).isDirectory) throw new Error("not a directory");
    } catch (err) {
      if (!d.quiet) {
        warnings.push(`plugin directory ${d.dir} (from ${d.origin}) skipped: ${_reason(err)}`);
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

  for (const spec of config.plugins) {
    const pkg = await packageSource(spec, config, options.policy);
    if (typeof pkg === "string") warnings.push(pkg);
    else sources.push(pkg);
  }
  return { sources, dirs, warnings };
}

/** The plugin files of one directory, and the files rejected with the reason. */
export interface DirScan {
  /** Accepted plugin files: real path and the stem of the name in the directory. */
  entries: Array<{ file: string; stem: string }>;
  /** The accepted real paths. */
  files: string[];
  /** One line per rejected file. */
  rejected: string[];
}

/**
 * Scan a file-drop directory: files ending `.ts`, `.js` or `.mjs`, not
 * starting with `_`, not `*_test.*`, sorted by name. A file (or a file it
 * imports) whose real path leaves the directory, for instance through a
 * symlink, is rejected. corral's own `core/` may be imported.
 */
export async function scanPluginDir(dir: string): Promise<DirScan> {
  const out: DirScan = { entries: [], files: [], rejected: [] };
  const root = await Deno.realPath(dir);
  const found: Array<{ name: string; link: boolean }> = [];
  // Sync: one call for the whole listing, where the async form pays a trip per batch.
  for (const e of Deno.readDirSync(dir)) {
    if (!e.isFile && !e.isSymlink) continue;
    if (!isPluginFileName(e.name)) continue;
    found.push({ name: e.name, link: e.isSymlink });
  }
  found.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  // Files are checked concurrently (a start with many plugins stays fast);
  // results keep the sorted order.
  const checked = await _mapLimit(found, 32, async ({ name, link }) => {
    const path = join(dir, name);
    let real = join(root, name); // a plain file in a real directory is its own real path
    if (link) {
      try {
        real = await Deno.realPath(path);
      } catch (err) {
        return { rejected: `rejected ${path}: cannot resolve it (${_reason(err)})` };
      }
      if (!isInside(real, root)) {
        return {
          rejected:
            `rejected ${path}: it is a symlink to ${real}, outside the plugin directory ${dir}`,
        };
      }
      if (!(await Deno.stat(real)).isFile) return {};
    }
    const escape = await graphEscape(real, root);
    if (escape) return { rejected: `rejected ${path}: ${escape}` };
    return { entry: { file: real, stem: stemOf(name) } };
  });
  for (const c of checked) {
    if (c.rejected) out.rejected.push(c.rejected);
    if (c.entry) {
      out.entries.push(c.entry);
      out.files.push(c.entry.file);
    }
  }
  return out;
}

async function _mapLimit<T, R>(
  items: T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Whether a file name is a plugin module: `.ts`/`.js`/`.mjs`, no `_` prefix, no `_test`. */
export function isPluginFileName(name: string): boolean {
  if (!/\.(ts|js|mjs)$/.test(name) || name.endsWith(".d.ts")) return false;
  return !name.startsWith("_") && !/_test\.(ts|js|mjs)$/.test(name);
}

let _coreReal: Promise<string> | undefined;
/** A quoted specifier that names a local file: `./`, `../`, `/` or `file:`. */
const _LOCAL_SPECIFIER = /["'](?:\.{1,2}\/|\/|file:)/;

/**
 * Why the local module graph of `file` leaves `root` (a file it imports
 * resolves outside it, e.g. through a symlinked directory), or undefined.
 * Files of corral's own `core/` are allowed. The sandbox gets read access
 * to every file of this graph, so an escape would widen the plugin's grant.
 */
export async function graphEscape(file: string, root: string): Promise<string | undefined> {
  const core = await (_coreReal ??= Deno.realPath(_CORE).catch(() => _CORE));
  // Plugin files are small: a sync read is far cheaper than a promise each.
  const text = Deno.readTextFileSync(file);
  // Most plugins import only packages ("zod", npm:…): no local file to follow.
  if (!_LOCAL_SPECIFIER.test(text)) return undefined;
  const read = (f: string) => Promise.resolve(f === file ? text : Deno.readTextFileSync(f));
  for (const f of await localModuleGraph([file], {}, read)) {
    if (f === file) continue;
    let real = f;
    try {
      real = await Deno.realPath(f);
    } catch { /* missing: judge the path as written */ }
    if (isInside(real, root) || isInside(real, core)) continue;
    const link = real === f ? "" : ` (through a symlink: ${f} -> ${real})`;
    return `it imports ${real}${link}, outside the plugin directory ${root} ` +
      `(a plugin may import files of its own directory and corral's core/)`;
  }
  return undefined;
}

/**
 * Short unique labels for directories: the basename, lengthened with parent
 * names until every label is unique (`plugins`, `a/tools`, `b/tools`).
 *
 * @example
 * ```ts
 * import { uniqueLabels } from "./plugins.ts";
 * console.assert(uniqueLabels(["/x/a/tools", "/y/b/tools", "/z/p"]).join() === "a/tools,b/tools,p");
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
 * import { packageName } from "./plugins.ts";
 * console.assert(packageName("npm:@acme/weather@1.2.0/tools") === "@acme/weather");
 * console.assert(packageName("jsr:@acme/dice@^1") === "@acme/dice");
 * console.assert(packageName("./vendor/stocks/mod.ts") === "stocks");
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
 * The toolset source of one package plugin, or a one-line reason it was
 * rejected. Local paths resolve against the config's directory and must
 * not import files outside their own directory.
 */
export async function packageSource(
  spec: string,
  config: Pick<CorralConfig, "baseDir" | "services">,
  policy: Policy,
): Promise<ToolsetSource | string> {
  const name = packageName(spec);
  const id = `package:${spec}`;
  let module = spec;
  if (!isRemoteSpecifier(spec)) {
    const path = resolve(
      config.baseDir,
      expandHome(spec.startsWith("file://") ? new URL(spec).pathname : spec),
    );
    try {
      module = await Deno.realPath(path);
    } catch (err) {
      return `package plugin ${spec} skipped: ${path}: ${_reason(err)}`;
    }
    const escape = await graphEscape(module, dirname(module));
    if (escape) return `package plugin ${spec} rejected: ${escape}`;
  }
  return {
    id,
    kind: "package",
    modules: [module],
    policy: policy.plugin(id, name),
    config: config.services[name],
    imports: importHosts(spec),
  };
}

/**
 * The hosts a remote package's code is imported from: the host of an
 * `https:`/`http:` specifier, `jsr.io` for `jsr:`; none for `npm:` and paths.
 *
 * @example
 * ```ts
 * import { importHosts } from "./plugins.ts";
 * console.assert(importHosts("https://example.com:8443/mod.ts")[0] === "example.com:8443");
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
  });
  return { registry, warnings: found.warnings, sources: found.sources };
}

/**
 * Load one plugin directory and return its tools, load problems and
 * warnings (the registry is closed again). Quiet by default.
 *
 * @example
 * ```ts ignore
 * import { loadPluginDir } from "./plugins.ts";
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

/**
 * Install a package plugin: `deno cache` it with corral's config, so that
 * corral's lock file pins it and the sandboxes (which run `--cached-only
 * --frozen`) can load it, then add it to `plugins` of the config file
 * (created when missing). Running corral itself never downloads code.
 */
export async function installPlugin(
  spec: string,
  options: { configFile: string; deno?: string },
): Promise<{ added: boolean; output: string }> {
  const configFile = resolve(options.configFile);
  const target = isRemoteSpecifier(spec) ? spec : resolve(dirname(configFile), expandHome(spec));
  const cmd = new Deno.Command(options.deno ?? Deno.execPath(), {
    args: [
      "cache",
      `--config=${join(_ROOT, "deno.json")}`,
      ...importHosts(spec).map((h) => `--allow-import=${h}`),
      target,
    ],
    stdout: "piped",
    stderr: "piped",
  });
  const res = await cmd.output();
  const output = new TextDecoder().decode(res.stdout) + new TextDecoder().decode(res.stderr);
  if (!res.success) {
    throw new ConfigError(`Cannot install ${spec}: deno cache failed:\n${output.trim()}`);
  }
  let raw: Record<string, unknown> = {};
  try {
    const text = await Deno.readTextFile(configFile);
    parseConfig(text, configFile); // validate before changing it
    raw = JSON.parse(text);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const list = Array.isArray(raw.plugins) ? raw.plugins as string[] : [];
  if (list.includes(spec)) return { added: false, output };
  raw.plugins = [...list, spec];
  await Deno.writeTextFile(configFile, JSON.stringify(raw, null, 2) + "\n");
  return { added: true, output };
}

function stemOf(name: string): string {
  return basename(name, extname(name));
}

function _reason(err: unknown): string {
  if (err instanceof Deno.errors.NotFound) return "not found";
  return err instanceof Error ? err.message : String(err);
}

function _env(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}
