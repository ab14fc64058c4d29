/**
 * Package plugins: `npm:`, `jsr:`, `https:` specifiers or local paths,
 * listed in `plugins` of corral.json. Running corral never downloads code:
 * {@link installPlugin} caches a package and pins it in the lock file.
 *
 * @module
 */
import { basename, dirname, join, resolve } from "node:path";
import { type CorralConfig, parseConfig } from "../config/corral_config.ts";
import { expandHome } from "../config/env_var.ts";
import { INSTALL_DIR } from "../config/install_dir.ts";
import { type Policy, readyJsonc } from "../config/policy.ts";
import type { ToolsetSource } from "../registry/catalog.ts";
import { childErrorText, QUIET_CHILD_ENV } from "../guard/child_output.ts";
import { ConfigError } from "../tool/errors.ts";
import { errorReason, graphEscape, stemOf } from "./plugin_files.ts";

/**
 * The plugin name of a package specifier or path: the npm/jsr package name,
 * or the file stem (the directory name for `mod.ts`/`index.ts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { packageName } from "./packages.ts";
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
 * The toolset source of one package plugin, or a one-line reason it was
 * rejected. Local paths resolve against the config's directory and must
 * not import files outside their own directory.
 */
export async function packageSource(
  spec: string,
  config: Pick<CorralConfig, "baseDir" | "services" | "packageBase">,
  policy: Policy,
  where = `corral.json: plugins "${spec}"`,
): Promise<ToolsetSource | string> {
  const name = packageName(spec);
  const id = `package:${spec}`;
  let module = spec;
  if (!isRemoteSpecifier(spec)) {
    const path = resolve(
      config.packageBase?.[spec] ?? config.baseDir,
      expandHome(spec.startsWith("file://") ? new URL(spec).pathname : spec),
    );
    try {
      module = await Deno.realPath(path);
    } catch (err) {
      return `package plugin ${spec} skipped: ${path}: ${errorReason(err)}`;
    }
    if (!(await Deno.stat(module)).isFile) {
      throw new ConfigError(
        `${where}: ${path} is not a module file (a package given as a path names its entry ` +
          `file, e.g. ${join(spec, "mod.ts")}; a folder of plugins goes in "tool_dirs")`,
      );
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
 * import assert from "node:assert/strict";
 * import { importHosts } from "./packages.ts";
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
  // Validate before anything is written: a bad entry would break every later command.
  if (!isRemoteSpecifier(spec)) {
    let st: Deno.FileInfo;
    try {
      st = await Deno.stat(target);
    } catch (err) {
      throw new ConfigError(`Cannot install ${spec}: ${target}: ${errorReason(err)}`);
    }
    if (!st.isFile) {
      throw new ConfigError(
        `Cannot install ${spec}: ${target} is a directory, not a module file (name its entry ` +
          `file, e.g. ${join(spec, "mod.ts")}; a folder of plugins goes in "tool_dirs")`,
      );
    }
  }
  const cmd = new Deno.Command(options.deno ?? Deno.execPath(), {
    args: [
      "cache",
      `--config=${join(INSTALL_DIR, "deno.json")}`,
      ...importHosts(spec).map((h) => `--allow-import=${h}`),
      target,
    ],
    env: QUIET_CHILD_ENV,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
  const res = await cmd.output();
  const output = new TextDecoder().decode(res.stdout) + new TextDecoder().decode(res.stderr);
  if (!res.success) {
    // What Deno says is wrong, without its backtrace, progress or colours.
    const why = childErrorText(output) || `deno cache exited with ${res.code}`;
    throw new ConfigError(`Cannot install ${spec}: ${why.replace(/^error:\s*/i, "")}`);
  }
  let raw: Record<string, unknown> = {};
  try {
    const text = await Deno.readTextFile(configFile);
    await readyJsonc(text);
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
