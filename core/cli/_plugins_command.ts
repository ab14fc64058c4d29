/**
 * `corral plugins [list]`: the plugin directories, files and packages found
 * (nothing is imported). `corral plugins install SPEC`: cache a package,
 * pin it in the lock file and add it to corral.json. `corral plugins init
 * [DIR]`: a deno.json there, for `deno run` and `deno test` of its tools.
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { configDir, defaultPluginDir, expandHome, INSTALL_DIR } from "../config/mod.ts";
import { confinePlugins, initPluginDir, installPlugin } from "../plugins/mod.ts";
import { cliSettings } from "./_cli_settings.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { terminalSafe } from "../tool/mod.ts";
import { out } from "./_output.ts";

/** Run `corral plugins`; returns the exit code. */
export async function pluginsCommand(values: CliValues, rest: string[]): Promise<number> {
  const sub = rest[0] ?? "list";
  if (sub === "install") {
    if (!rest[1]) {
      throw new UsageError("plugins install needs a specifier (npm:, jsr:, https: or a path)");
    }
    if (rest.length > 2) {
      throw new UsageError(`plugins install takes one specifier, got ${rest.length - 1}`);
    }
    // The config named by --config (made when missing), else corral's config directory.
    const configFile = values.config
      ? resolve(expandHome(values.config))
      : join(configDir(), "corral.json");
    await Deno.mkdir(dirname(configFile), { recursive: true });
    const res = await installPlugin(rest[1], { configFile });
    out(`installed ${rest[1]}; ${res.added ? "added to" : "already in"} ${configFile}`);
    return 0;
  }
  if (sub === "init") return await _init(values, rest[1]);
  if (sub !== "list") {
    throw new UsageError(`unknown plugins command "${sub}" (list, install, init)`);
  }
  if (rest.length > 1) throw new UsageError(`plugins list takes no arguments, got "${rest[1]}"`);
  const s = await cliSettings(values, { quiet: true });
  const found = await confinePlugins(s.plugins);
  if (values.json) {
    out(JSON.stringify(
      {
        dirs: found.dirs.map((d) => ({ dir: d.dir, origin: d.origin, label: d.label })),
        sources: found.sources.map((s) => ({
          id: s.id,
          kind: s.kind,
          module: s.modules[0],
          policy: s.policy.where,
        })),
        warnings: found.warnings,
      },
      null,
      2,
    ));
    return 0;
  }
  for (const d of found.dirs) {
    out(terminalSafe(`${d.dir}  (${d.origin}; toolsets plugin:${d.label}/...)`));
  }
  for (const s of found.sources) {
    out(terminalSafe(`  ${s.id}  ${s.modules[0]}  [${s.policy.where}]`));
  }
  for (const w of found.warnings) out(terminalSafe(`  Warning: ${w}`));
  return 0;
}

/**
 * `corral plugins init [DIR]`: a deno.json in DIR (default: the first plugin
 * folder corral loads) that points `@corral/corral` at this corral.
 */
async function _init(values: CliValues, given?: string): Promise<number> {
  let dir = given && resolve(expandHome(given));
  if (!dir) {
    const s = await cliSettings(values, { quiet: true });
    dir = s.pluginDirs[0]?.dir ?? defaultPluginDir();
  }
  try {
    const made = await initPluginDir(dir);
    out(
      `${made.replaced ? "rewrote" : "wrote"} ${made.file}: in ${dir}, deno run -A FILE ` +
        `--help and deno test resolve @corral/corral to ${INSTALL_DIR} (corral itself does not ` +
        `read it)`,
    );
  } catch (err) {
    if (err instanceof TypeError) throw new UsageError(err.message);
    throw err;
  }
  return 0;
}
