/**
 * `corral new NAME [--permissions LETTERS] [--dir DIR] [--style class|module]`:
 * write a working tool file and its test where corral loads plugins from
 * (the first plugin directory of the settings: `~/.config/corral/plugins/`
 * unless `default_plugin_dir` is false), and say which policy entry would
 * grant its letters. A `--dir` corral does not load is said plainly, and a
 * name some tool already has is refused: the new file would shadow it, or be
 * shadowed, silently.
 *
 * @module
 */
import { resolve } from "node:path";
import { defaultPluginDir, type Settings } from "../config/mod.ts";
import { confinePlugins, scaffoldTool } from "../plugins/mod.ts";
import { Registry, reservedToolNames } from "../registry/mod.ts";
import { Reporter } from "../tool/mod.ts";
import { cliSettings } from "./_cli_settings.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { out } from "./_output.ts";

/** Run `corral new`; returns the exit code. */
export async function newCommand(values: CliValues, rest: string[]): Promise<number> {
  if (!rest[0]) throw new UsageError("new needs a tool name: corral new NAME --permissions r");
  // For `new`, --permissions is the tool's letters, not a policy file.
  const settings = await cliSettings({ ...values, permissions: undefined }, { quiet: true });
  const loaded = settings.pluginDirs;
  const dir = resolve(values.dir ?? loaded[0]?.dir ?? defaultPluginDir());
  const clash = await _existingTool(rest[0], settings);
  if (clash) {
    throw new UsageError(
      `a tool named "${rest[0]}" already exists (${clash}): a new one would shadow it or be ` +
        `shadowed by it; choose another name`,
    );
  }
  let made;
  try {
    made = await scaffoldTool({
      name: rest[0],
      permissions: values.permissions ?? "",
      dir,
      style: (values.style ?? "class") as "class" | "module",
    });
  } catch (err) {
    if (err instanceof TypeError) throw new UsageError(err.message);
    throw err;
  }
  out(`wrote ${made.file}\nwrote ${made.test}`);
  if (!loaded.some((d) => _same(d.dir, dir))) {
    out(
      `Note: corral does not load plugins from ${dir}: add it to "tool_dirs" in corral.json ` +
        `(corral config shows the files), or write into one it loads: ${
          loaded.map((d) => d.dir).join(", ") || "none (default_plugin_dir is false)"
        }`,
    );
  }
  if (made.policyHint) {
    out(`Plugins get no permissions by default; grant them in ${settings.policy.editFile}:`);
    out(`  ${made.policyHint}`);
  }
  out(`Check it with: corral check ${made.file}`);
  out(`Run it alone:  corral harness ${made.file} --help`);
  return 0;
}

/**
 * Where a tool of this name already is (a built-in, or a plugin of a folder
 * corral loads, as discovery sees it), or undefined.
 */
async function _existingTool(name: string, settings: Settings): Promise<string | undefined> {
  const builtin = (await reservedToolNames()).get(name);
  if (builtin) return `a built-in tool of the toolset "${builtin}"`;
  const plugins = await confinePlugins(settings.plugins);
  const registry = await Registry.create({
    workspace: settings.workspace,
    policy: settings.policy,
    noBuiltins: true,
    sources: plugins.sources,
    reporter: new Reporter({ quiet: true, sink: () => {} }),
    quietProblems: true,
    ...(settings.cache ? {} : { cacheDir: null }),
  });
  try {
    const found = registry.list().find((t) => t.name === name);
    return found && `in ${found.source}`;
  } finally {
    await registry.close();
  }
}

function _same(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return Deno.realPathSync(p);
    } catch {
      return resolve(p);
    }
  };
  return real(a) === real(b);
}
