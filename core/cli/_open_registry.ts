/**
 * What the commands that need the catalog share: the workspace and config
 * from the command line, the policy, the plugin sources, and the registry
 * built from them with the letters the user granted.
 *
 * @module
 */
import { resolve } from "node:path";
import type { CorralConfig, Policy, Settings } from "../config/mod.ts";
import { probeLimits } from "../jail/mod.ts";
import { useCaFiles } from "../egress/mod.ts";
import { confinePlugins, type PluginSources } from "../plugins/mod.ts";
import {
  defaultCacheDir,
  DiscoveryCache,
  Registry,
  registryBanner,
  type RegistryOptions,
} from "../registry/mod.ts";
import type { Reporter } from "../tool/mod.ts";
import { cliSettings } from "./_cli_settings.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { userCwd } from "./_user_cwd.ts";

/** The folder the user ran corral from (see core/cli/_user_cwd.ts); the settings of a command. */
export { cliSettings, userCwd };

/** What `--watch` needs to scan the plugin directories again. */
export interface PluginScan {
  policy: Policy;
  config: CorralConfig;
  workspace: string;
  /** Where relative `CORRAL_TOOL_DIRS` entries resolve. */
  envBase: string;
  /** The real paths of the file-drop directories. */
  dirs: string[];
  /** Every setting, as resolved once for this command. */
  settings: Settings;
}

/** A registry opened for one command, with what the plugin scan found. */
export interface CliSession {
  registry: Registry;
  reporter: Reporter;
  /** Rejected plugin files and missing plugin directories, for `list`. */
  pluginWarnings: string[];
  /** How to scan the plugins again. */
  plugins: PluginScan;
}

/**
 * Build the registry for a command from its settings, resolved once:
 * letters, policy, config, plugins, audit. The "full privileges" warning is
 * said where it informs (the human `list`, the `mcp` banner); `call` and
 * `--json` keep stderr for the call.
 */
export async function openRegistry(
  values: CliValues,
  reporter: Reporter,
  command?: string,
): Promise<CliSession> {
  const settings = await cliSettings(values, { examples: command === "demo" });
  const human = command !== "call" && !values.json;
  const notes = _settingsNotes(settings, command === "mcp" || (command === "list" && human));
  const { config, policy } = settings;
  // One discovery cache for the plugins' check and the registry: unchanged files are not read.
  const cache = settings.cache ? new DiscoveryCache(defaultCacheDir(), reporter) : undefined;
  const plugins = await confinePlugins(settings.plugins, cache && ((f) => cache.knownImports(f)));
  _useCaFiles(values);
  const registry = await Registry.create({
    ..._registryOptions(settings, plugins, reporter, cache),
    // `call` keeps stderr for its call: only the warnings about its tool (core/cli/_call_command.ts).
    quietWarnings: command === "call",
    ...(values.hold ? { hold: true } : {}),
  });
  const skipped = registry.problems.length + plugins.warnings.length;
  if (skipped && human) {
    notes.push(
      `Warning: ${skipped} plugin file${skipped === 1 ? "" : "s"} did not load ` +
        `(corral list says why)`,
    );
  }
  if (!reporter.quiet) await _sayNotes(notes, registry, reporter);
  return {
    registry,
    reporter,
    pluginWarnings: plugins.warnings,
    plugins: {
      policy,
      config,
      workspace: settings.workspace,
      envBase: userCwd(),
      dirs: plugins.dirs.map((d) => d.real),
      settings,
    },
  };
}

/** The operator's extra trust store (`--ca-file`), for every sandbox (core/egress/trust_store.ts). */
function _useCaFiles(values: CliValues): void {
  if (!values["ca-file"]?.length) return;
  try {
    useCaFiles(values["ca-file"].map((f) => resolve(userCwd(), f)));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** The registry's options from the settings: any command's, the command's own added after. */
function _registryOptions(
  settings: Settings,
  plugins: PluginSources,
  reporter: Reporter,
  cache: DiscoveryCache | undefined,
): RegistryOptions {
  const { config } = settings;
  return {
    privileges: settings.letters,
    toolsets: settings.toolsets,
    policy: settings.policy,
    workspace: settings.workspace,
    sources: plugins.sources,
    reporter,
    servers: config.servers,
    // Load problems and rejected files: one line that points to `corral list`, not a
    // screenful on every command (list itself shows them in full).
    quietProblems: true,
    // An identity's workspace opens a registry of its own (core/cli/_team_server.ts): once each.
    said: _said,
    rejected: plugins.rejected,
    ...(cache ? { discoveryCache: cache } : { cacheDir: null }),
    discoveryProgress: !reporter.quiet,
    // The config files in use and every plugin directory (found or not) are trust base.
    trusted: [
      ...(config.files ?? []).map((path) => ({ path, what: "a config file", secret: true })),
      ...plugins.dirs.map((d) => ({ path: d.real, what: "a plugin directory" })),
      // Configured ones that do not exist yet: no tool may create them either.
      ...settings.pluginDirs.map((d) => ({ path: d.dir, what: "a plugin directory" })),
    ],
    ...(settings.audit ? { auditPath: settings.audit } : {}),
    ...(config.auditMaxBytes !== null ? { auditLimits: { maxBytes: config.auditMaxBytes } } : {}),
    ...(config.auditRequired ? {} : { auditOptional: true }),
  };
}

/** The notes, then the registry's banner: each line said once per start. */
async function _sayNotes(notes: string[], registry: Registry, reporter: Reporter): Promise<void> {
  // The banner says which limits bind: their probe, not a second one. Quiet, no banner,
  // and the probe goes on while the command starts (a sandbox awaits it).
  await probeLimits();
  for (const line of [...notes, ...registryBanner(registry)]) {
    if (!_said.has(line)) reporter.line(line, "yellow");
    _said.add(line);
  }
}

/** The warnings and notes this process printed: each is said once per start. */
const _said = new Set<string>();

/** What the user should hear about the settings: full privileges, ignored project files. */
function _settingsNotes(settings: Settings, privileges: boolean): string[] {
  const notes: string[] = [];
  if (!settings.lettersGiven && privileges) {
    notes.push("Warning: corral runs with full privileges (r w x n); limit them with -r -w -x -n");
  }
  for (const { file, flag } of settings.ignored) {
    notes.push(
      `Warning: ignoring ${file}: a file in the workspace is used only once trusted ` +
        `(a tool may be able to write it); review it and run "corral trust", or pass ${flag} ${file}`,
    );
  }
  return notes;
}
