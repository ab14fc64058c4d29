/**
 * `corral harness [--config F] [--workspace D] FILE [TOOL] [ARGS]`: run a
 * tool file's own command line (core/tool/harness.ts) from wherever the
 * file lives, with corral's import map, as corral would run the tool: its
 * module's `TOOL_SETUP` gets the plugin's section of corral.json, and a
 * module whose `is_configured()` is false, or a tool whose `shouldLoad()`
 * refuses, is refused with the reason. Both authoring styles get it with no
 * code of their own. The tool runs outside any sandbox, in a `deno run` of
 * its own with corral's flags, like `deno run -A FILE`: a developer's tool.
 *
 * @module
 */
import { basename, join, resolve } from "node:path";
import { expandHome, INSTALL_DIR, resolveSettings, type Settings, stemOf } from "../config/mod.ts";
import { HOST_PERMISSION_FLAGS, selfHosted } from "../sandbox/mod.ts";
import { HARNESS_ENV, type HarnessSetup } from "../tool/mod.ts";
import { commandHelp, UsageError } from "./_options.ts";
import { out } from "./_output.ts";
import { fromUser, userCwd } from "./_user_cwd.ts";

/** corral's options `harness` takes before FILE (the rest goes to the tool). */
const _VALUED = new Set(["--config", "--workspace", "--permissions"]);

/** Run `corral harness` with the words after `harness`; returns the tool's exit code. */
export async function harnessCommand(argv: string[]): Promise<number> {
  const words = _words(argv);
  if (words === "help") {
    out(commandHelp("harness")!);
    return 0;
  }
  const { own, given, rest } = words;
  if (selfHosted()) {
    throw new UsageError(
      "harness runs a tool file with Deno, which a compiled corral does not carry: run it from " +
        "corral's folder (deno task corral harness FILE) or an installed corral",
    );
  }
  const file = await _toolFile(given);
  const workspace = await Deno.realPath(own.workspace ?? userCwd()).catch(() => {
    throw new UsageError(`--workspace "${own.workspace}": no such directory`);
  });
  const settings = await resolveSettings({
    workspace,
    workspaceFrom: own.workspace ? "--workspace" : "the folder corral was run from",
    config: own.config,
    permissions: own.permissions,
    envBase: userCwd(),
  });
  return await _runTool(file, rest, workspace, await harnessSetup(file, settings));
}

/**
 * The words after `harness`: corral's options before FILE (paths as the user
 * meant them), FILE as given, and the tool's words after it; or "help".
 */
function _words(
  argv: string[],
): "help" | { own: Record<string, string>; given: string; rest: string[] } {
  const own: Record<string, string> = {};
  let i = 0;
  for (; i < argv.length && argv[i].startsWith("-"); i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    if (flag === "--help" || flag === "-h") return "help";
    if (!_VALUED.has(flag)) {
      throw new UsageError(
        `harness takes --config, --workspace and --permissions before FILE; the tool's own ` +
          `flags come after it (corral harness FILE ${argv[i]}), got "${argv[i]}"`,
      );
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`${flag} needs a value`);
    own[flag.slice(2)] = expandHome(fromUser(value));
  }
  const given = argv[i];
  if (!given) throw new UsageError("harness needs a tool file: corral harness FILE [ARGS]");
  return { own, given, rest: argv.slice(i + 1) };
}

/** The tool file the user named, as a path from where they stood; a usage error when it is none. */
async function _toolFile(given: string): Promise<string> {
  const file = expandHome(fromUser(given));
  try {
    if (!(await Deno.stat(file)).isFile) throw new Error("not a file");
  } catch (err) {
    const why = err instanceof Deno.errors.NotFound ? "no such file" : (err as Error).message;
    throw new UsageError(`harness: "${given}": ${why}`);
  }
  return file;
}

/** The tool's own command line in a `deno run` of its own with corral's flags; its exit code. */
async function _runTool(
  file: string,
  rest: string[],
  workspace: string,
  setup: HarnessSetup,
): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...HOST_PERMISSION_FLAGS,
      "--config",
      join(INSTALL_DIR, "deno.json"),
      // corral's lock, as in every sandbox: a package it does not pin is refused, not fetched.
      "--frozen",
      join(INSTALL_DIR, "core", "tool", "harness_main.ts"),
      file,
      ...rest,
    ],
    cwd: workspace,
    env: { [HARNESS_ENV]: JSON.stringify(setup) },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  return (await child.status).code;
}

/**
 * The plugin name and config section corral would give `file`: its own
 * entry when a plugin folder of the settings holds it, else the one its
 * file stem names (`services.<stem>`).
 */
export async function harnessSetup(file: string, settings: Settings): Promise<HarnessSetup> {
  const real = await Deno.realPath(file).catch(() => resolve(file));
  const found = settings.plugins.candidates.find((c) => c.module === real);
  const plugin = found?.id.split("/").pop() ?? stemOf(basename(file));
  const config = found ? found.config : settings.config.services[plugin];
  const files = [
    ...new Set(
      settings.entries.config
        .filter((e) => e.key === `services.${plugin}` || e.key.startsWith(`services.${plugin}.`))
        .flatMap((e) => e.from),
    ),
  ];
  const configFrom = config === undefined
    ? `{} (corral.json has no services.${plugin})`
    : `services.${plugin} of ${files.join(" + ") || "corral.json"}`;
  return { plugin, ...(config === undefined ? {} : { config }), configFrom };
}
