/**
 * Package plugins: `npm:`, `jsr:`, `https:` specifiers or local paths,
 * listed in `plugins` of corral.json. Running corral never downloads code:
 * {@link installPlugin} caches a package and pins it in the lock file.
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import {
  type CorralConfig,
  errorReason,
  expandHome,
  importHosts,
  INSTALL_DIR,
  isRemoteSpecifier,
  packageName,
  parseConfig,
  type Policy,
  readyJsonc,
} from "../config/mod.ts";
import type { ToolsetSource } from "../registry/mod.ts";
import { childErrorText, denoProgram, QUIET_CHILD_ENV } from "../base/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import { graphEscape } from "./plugin_files.ts";

export { importHosts, isRemoteSpecifier, packageName } from "../config/mod.ts";

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
  // A compiled corral installs with the Deno on PATH (it cannot be `deno cache` itself).
  const deno = options.deno ?? denoProgram();
  if (typeof deno !== "string") throw new ConfigError(`Cannot install ${spec}: ${deno.missing}`);
  const cmd = new Deno.Command(deno, {
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
