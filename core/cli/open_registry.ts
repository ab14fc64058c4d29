/**
 * What the commands that need the catalog share: the workspace and config
 * from the command line, the policy, the plugin sources, and the registry
 * built from them with the letters the user granted.
 *
 * @module
 */
import { type CorralConfig, loadConfig } from "../config/corral_config.ts";
import { loadPolicy, type Policy } from "../config/policy.ts";
import { pluginSources } from "../plugins/plugins.ts";
import { Registry, type RegistryOptions } from "../registry/registry.ts";
import type { Reporter } from "../tool/reporter.ts";
import { type CliValues, UsageError } from "./options.ts";

/** The workspace (`--workspace`, else the current directory) and the config. */
export async function workspaceConfig(
  values: CliValues,
): Promise<{ config: CorralConfig; workspace: string }> {
  let workspace: string;
  try {
    workspace = Deno.realPathSync(values.workspace ?? Deno.cwd());
    if (!Deno.statSync(workspace).isDirectory) throw new Error("not a directory");
  } catch (err) {
    const reason = err instanceof Deno.errors.NotFound
      ? "no such directory"
      : (err as Error).message;
    throw new UsageError(`--workspace "${values.workspace ?? "."}": ${reason}`);
  }
  return { config: await loadConfig({ file: values.config, workspace }), workspace };
}

/** What `--watch` needs to scan the plugin directories again. */
export interface PluginScan {
  policy: Policy;
  config: CorralConfig;
  workspace: string;
  /** The real paths of the file-drop directories. */
  dirs: string[];
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

/** Build the registry for a command: letters, policy, config, plugins, audit. */
export async function openRegistry(values: CliValues, reporter: Reporter): Promise<CliSession> {
  let letters = ["r", "w", "x", "n"].filter((l) => values[l as "r"]).join("");
  if (letters === "") {
    letters = "rwxn";
    reporter.line(
      "Warning: corral runs with full privileges (r w x n); limit them with -r -w -x -n",
      "yellow",
    );
  }
  const { config, workspace } = await workspaceConfig(values);
  const policy = await loadPolicy({ file: values.permissions, workspace });
  const plugins = await pluginSources({ policy, config, workspace });
  for (const w of plugins.warnings) reporter.line(`Warning: ${w}`, "yellow");
  const options: RegistryOptions = {
    privileges: letters,
    toolsets: [...new Set([...config.toolsets, ...(values.toolset ?? [])])],
    policy,
    workspace,
    sources: plugins.sources,
    reporter,
  };
  if (values["no-cache"]) options.cacheDir = null;
  const audit = values.audit ?? config.audit;
  if (audit) options.auditPath = audit;
  return {
    registry: await Registry.create(options),
    reporter,
    pluginWarnings: plugins.warnings,
    plugins: { policy, config, workspace, dirs: plugins.dirs.map((d) => d.real) },
  };
}
