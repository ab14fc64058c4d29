/**
 * corral's command line: parse, pick the command, return its exit code.
 * Each command lives in its own module under core/cli/. main.ts runs it,
 * from the host bundle when that is fresh (./host_bundle.ts).
 *
 *     corral list [--json]
 *     corral stats [--json]
 *     corral schema [NAME] [--format openai|anthropic|mcp]
 *     corral call NAME [--args '<json object>' | --args -] [--yes] [--timeout MS] [--hold]
 *     corral changes [list] | show ID | apply ID | drop ID
 *     corral demo
 *     corral config [--json]
 *     corral audit [PATH] [--tool X] [--since ISO|1h|30m]
 *     corral trust [FILE…]
 *     corral check PATH…
 *     corral harness [--config F] [--workspace D] FILE [TOOL] [ARGS…]
 *     corral new NAME [--permissions LETTERS] [--dir DIR] [--style class|module]
 *     corral plugins [list] | corral plugins install SPEC
 *     corral mcp [--http [HOST:]PORT [--token T] [--stateless]]
 *     corral mcp --client-config [--http URL] [--show-token]
 *     corral servers [list] | install [NAME] | approve NAME
 *     corral tokens add NAME | revoke NAME | list [--json]
 *
 * Exit codes: 0 success, 1 the tool (or check) failed, 2 usage or
 * configuration error, 3 internal error.
 *
 * @module
 */
import type { CliSession } from "./_open_registry.ts";
import {
  type CliValues,
  COMMAND_ARITY,
  commandHelp,
  parseCli,
  USAGE,
  UsageError,
} from "./_options.ts";
import { out, useColor } from "./_output.ts";
import { removeScratch } from "./_scratch.ts";
import { resolveUserPaths } from "./_user_cwd.ts";
// By file, not through the folders' faces: every command starts here, and loads the rest of
// corral only when it runs (tests/architecture_test.ts keeps this start small).
import { dropPermissions, useSelfStore } from "../base/self_run.ts";
import { codeStoreDir } from "../config/install_dir.ts";
import { join } from "node:path";
import { ConfigError } from "../tool/errors.ts";
import { Reporter } from "../tool/reporter.ts";

/**
 * One of corral's own modules, by a computed specifier: Deno then loads the
 * module graph of the command that runs, not (at every start, `--help`
 * too) that of every command. `deno task compile` names these modules
 * (core/cli/compile.ts). In the host bundle (./host_bundle.ts) each comes
 * from the bundle's own table, so that the process holds one instance of
 * every module.
 */
function _load<T>(path: string): Promise<T> {
  const bundled = _bundled?.[path];
  if (bundled) return bundled() as Promise<T>;
  return import(new URL(path, import.meta.url).href);
}

let _bundled: Record<string, () => Promise<unknown>> | undefined;

/**
 * The modules {@link _load} takes from the host bundle, by the path it is
 * given (set by the bundle's entry: core/cli/bundle_build.ts).
 */
export function useBundled(table: Record<string, () => Promise<unknown>>): void {
  _bundled = table;
}

type _Standalone = (v: CliValues, rest: string[]) => Promise<number>;
type _OnCatalog = (v: CliValues, rest: string[], s: CliSession) => number | Promise<number>;
type _CatalogCommand = {
  onCatalog: () => Promise<_OnCatalog>;
  prepare?: (v: CliValues) => Promise<void>;
};

/**
 * Every command, in the order the help names them. A command either runs
 * alone or on the catalog (the registry is opened for it and closed after).
 * Each module loads only when its command runs (the MCP SDK, say, only for
 * `mcp`).
 */
const _COMMANDS: Record<
  string,
  | { alone: () => Promise<_Standalone> }
  | _CatalogCommand
> = {
  list: {
    onCatalog: async () => {
      const { listCommand } = await _load<typeof import("./_list_command.ts")>(
        "./_list_command.ts",
      );
      return (values, _rest, s) => listCommand(values, s, useColor());
    },
  },
  stats: {
    onCatalog: async () => {
      const { statsCommand } = await _load<typeof import("./_stats_command.ts")>(
        "./_stats_command.ts",
      );
      return (values, _rest, s) => statsCommand(values, s);
    },
  },
  schema: {
    onCatalog: async () => {
      const { schemaCommand } = await _load<typeof import("./_schema_command.ts")>(
        "./_schema_command.ts",
      );
      return (values, rest, s) => schemaCommand(values, s.registry, rest[0]);
    },
  },
  call: {
    onCatalog: async () => {
      const { callCommand } = await _load<typeof import("./_call_command.ts")>(
        "./_call_command.ts",
      );
      return (values, rest, s) => callCommand(values, rest[0], s.registry);
    },
  },
  changes: {
    alone: async () =>
      (await _load<typeof import("./_changes_command.ts")>("./_changes_command.ts")).changesCommand,
  },
  demo: {
    // The demo works in a scratch workspace of its own unless one is given.
    prepare: async (values) => {
      if (values.workspace) return;
      values.workspace = await (await _load<typeof import("./_demo_command.ts")>(
        "./_demo_command.ts",
      )).demoWorkspace();
    },
    onCatalog: async () => {
      const { demoCommand } = await _load<typeof import("./_demo_command.ts")>(
        "./_demo_command.ts",
      );
      return (_values, _rest, s) => demoCommand(s.registry, useColor());
    },
  },
  check: {
    alone: async () =>
      (await _load<typeof import("./_check_command.ts")>("./_check_command.ts"))
        .checkCommand,
  },
  new: {
    alone: async () =>
      (await _load<typeof import("./_new_command.ts")>("./_new_command.ts"))
        .newCommand,
  },
  plugins: {
    alone: async () =>
      (await _load<typeof import("./_plugins_command.ts")>("./_plugins_command.ts"))
        .pluginsCommand,
  },
  mcp: {
    onCatalog: async () => {
      const { mcpCommand } = await _load<typeof import("./_mcp_command.ts")>(
        "./_mcp_command.ts",
      );
      return (values, _rest, s) => mcpCommand(values, s);
    },
  },
  config: {
    alone: async () =>
      (await _load<typeof import("./_config_command.ts")>("./_config_command.ts"))
        .configCommand,
  },
  audit: {
    alone: async () =>
      (await _load<typeof import("./_audit_command.ts")>("./_audit_command.ts"))
        .auditCommand,
  },
  trust: {
    alone: async () =>
      (await _load<typeof import("./_trust_command.ts")>("./_trust_command.ts"))
        .trustCommand,
  },
  servers: {
    alone: async () =>
      (await _load<typeof import("./_servers_command.ts")>("./_servers_command.ts"))
        .serversCommand,
  },
  tokens: {
    alone: async () =>
      (await _load<typeof import("./_tokens_command.ts")>("./_tokens_command.ts"))
        .tokensCommand,
  },
};

/** Run the CLI with `argv`; returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const hidden = await _hidden(argv);
  if (hidden !== undefined) return hidden;
  // Where a compiled corral writes out its shell programs, which bash cannot read inside it.
  useSelfStore(join(codeStoreDir(), "self"));
  const reporter = new Reporter();
  const started: _Ahead = {};
  try {
    // A tool file's own command line: every word after FILE is the tool's, not corral's.
    if (argv[0] === "harness") {
      return await (await _load<typeof import("./harness_command.ts")>(
        "./harness_command.ts",
      )).harnessCommand(argv.slice(1));
    }
    const { values, positionals } = parseCli(argv);
    const said = await _helpOrVersion(values, positionals, reporter);
    if (said !== undefined) return said;
    const [command, ...rest] = positionals;
    _checkUsage(command, rest);
    // Every path the user typed means the folder they typed it in (not corral's, under deno task).
    resolveUserPaths(command, values as Record<string, unknown>, rest);
    // A client's entry for corral mcp: printed, nothing served, no catalog needed.
    if (command === "mcp" && values["client-config"]) {
      return await (await _load<typeof import("./_client_config.ts")>(
        "./_client_config.ts",
      )).clientConfigCommand(values);
    }
    const spec = _COMMANDS[command];
    if ("alone" in spec) return await (await spec.alone())(values, rest);
    return await _onCatalog(command, spec, values, rest, started);
  } catch (err) {
    return _failed(err, reporter);
  } finally {
    // A sandbox started ahead that the call did not take is stopped.
    if (started.ahead) {
      await (await _load<typeof import("../sandbox/prestart.ts")>("../sandbox/prestart.ts"))
        .dropPrestarted();
    }
    removeScratch();
  }
}

/**
 * The hidden commands, a compiled corral's programs it re-runs itself for
 * (core/base/self_run.ts) and the host bundle's build: their exit code, or
 * undefined for any other command line.
 */
async function _hidden(argv: string[]): Promise<number | undefined> {
  // A process sandbox, the tree applier, a hosted server's egress bridge.
  if (argv[0] === "__sandbox-child") {
    const { runSandboxChild } = await _load<typeof import("../sandbox/sandbox_child.ts")>(
      "../sandbox/sandbox_child.ts",
    );
    await runSandboxChild({ worker: true });
    return 0;
  }
  if (argv[0] === "__applier") {
    dropPermissions(["read", "write"]);
    const { runTreeApplier } = await _load<typeof import("../layers/tree_applier.ts")>(
      "../layers/tree_applier.ts",
    );
    await runTreeApplier(argv[1]);
    return 0;
  }
  // Make the host bundle now (./bundle_build.ts; a call starts it when its bundle is stale).
  if (argv[0] === "__bundle") {
    return await (await _load<typeof import("./bundle_build.ts")>("./bundle_build.ts"))
      .buildHostBundle();
  }
  if (argv[0] === "__egress-bridge") {
    dropPermissions(["read", "write", "net", "run"]);
    const { runEgressBridge } = await _load<typeof import("../hosted/egress_bridge.ts")>(
      "../hosted/egress_bridge.ts",
    );
    return await runEgressBridge(argv.slice(1));
  }
  return undefined;
}

/**
 * `--version`, `help [COMMAND]`, `COMMAND --help`, `--help`, or no command
 * at all (the usage, exit 2): the exit code once said; else undefined.
 */
async function _helpOrVersion(
  values: CliValues,
  positionals: string[],
  reporter: Reporter,
): Promise<number | undefined> {
  if (values.version) {
    out(await _versionLine());
    return 0;
  }
  const [command, topic0] = positionals;
  if (command === "help" || (values.help && command)) {
    const topic = command === "help" ? topic0 : command;
    if (!topic) {
      out(USAGE);
      return 0;
    }
    const help = commandHelp(topic);
    if (!help) throw new UsageError(`no help for "${topic}": it is not a command`);
    out(help);
    return 0;
  }
  if (values.help || positionals.length === 0) {
    (values.help ? out : (t: string) => reporter.line(t))(USAGE);
    return values.help ? 0 : 2;
  }
  return undefined;
}

/** Usage errors come before anything is loaded (and before any plugin warning). */
function _checkUsage(command: string, rest: string[]): void {
  if (command === "harness") {
    throw new UsageError(
      "harness comes first, and the tool's flags after its FILE: corral harness FILE [ARGS]",
    );
  }
  if (!Object.hasOwn(_COMMANDS, command)) {
    const known = [...Object.keys(_COMMANDS), "harness"].join(", ");
    throw new UsageError(`unknown command "${command}" (commands: ${known}, help)`);
  }
  const [min, max] = COMMAND_ARITY[command] ?? [0, Infinity];
  if (rest.length > max) {
    throw new UsageError(
      `${command} takes ${max === 0 ? "no" : `at most ${max}`} argument${
        max === 1 ? "" : "s"
      }; unexpected "${rest[max]}" (corral help ${command})`,
    );
  }
  if (rest.length < min) {
    throw new UsageError(`${command} needs an argument (corral help ${command})`);
  }
}

/** The sandbox a command started ahead of its catalog, if any (stopped at the end unless taken). */
interface _Ahead {
  ahead?: Promise<void>;
}

/**
 * A command on the catalog: the registry opened (while the command's modules
 * load), the command run, the registry closed.
 */
async function _onCatalog(
  command: string,
  spec: _CatalogCommand,
  values: CliValues,
  rest: string[],
  started: _Ahead,
): Promise<number> {
  await spec.prepare?.(values);
  await _startAhead(command, values, rest, started);
  const { openRegistry } = await _load<typeof import("./_open_registry.ts")>(
    "./_open_registry.ts",
  );
  // The command's modules (the MCP SDK, say) load while the catalog is built.
  const loading = spec.onCatalog();
  loading.catch(() => {}); // awaited below; a failure to open the registry comes first
  const session = await openRegistry(values, new Reporter({ quiet: values.quiet }), command);
  try {
    return await (await loading)(values, rest, session);
  } finally {
    await session.registry.close();
  }
}

/**
 * The sandbox this call needed last time starts now, while the host loads
 * (adopted only when the call needs exactly that one: core/sandbox/prestart.ts).
 * `corral mcp` on stdio: the sandbox its last session in this folder started first.
 */
async function _startAhead(
  command: string,
  values: CliValues,
  rest: string[],
  started: _Ahead,
): Promise<void> {
  if (command !== "call" && (command !== "mcp" || values.http !== undefined)) return;
  const recipes = await _load<typeof import("./prestart_recipe.ts")>("./prestart_recipe.ts");
  started.ahead =
    (command === "call" ? recipes.prestartCall(values, rest[0]) : recipes.prestartMcp(values))
      .catch(() => {});
  await started.ahead;
}

/** What went wrong, said; the exit code: 2 for usage and configuration, 3 for corral's own. */
function _failed(err: unknown, reporter: Reporter): number {
  if (err instanceof UsageError) {
    reporter.line(`corral: ${err.message}\nRun "corral --help" for usage.`);
    return 2;
  }
  if (err instanceof ConfigError) {
    reporter.line(`corral: ${err.message}`);
    return 2;
  }
  reporter.line(`corral: internal error: ${(err as Error)?.stack ?? err}`);
  return 3;
}

async function _versionLine(): Promise<string> {
  const { corralVersion } = await _load<typeof import("../config/version.ts")>(
    "../config/version.ts",
  );
  return `corral ${corralVersion()} (Deno ${Deno.version.deno})`;
}
