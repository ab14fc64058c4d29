/**
 * What the commands that need the catalog share: the workspace and config
 * from the command line, the policy, the plugin sources, and the registry
 * built from them with the letters the user granted.
 *
 * @module
 */
import { resolve } from "node:path";
import { type CorralConfig, loadConfig } from "../config/corral_config.ts";
import { envVar } from "../config/env_var.ts";
import { closestNames } from "../config/closest.ts";
import { INSTALL_DIR } from "../config/install_dir.ts";
import { loadPolicy, type Policy } from "../config/policy.ts";
import { trustedConfig, trustedPolicy } from "../config/project_trust.ts";
import { limitsMissing } from "../guard/limits.ts";
import { useCaFiles } from "../guard/trust_store.ts";
import { isWithin } from "../guard/namespace.ts";
import { pluginSources, splitToolDirs, TOOL_DIRS_ENV } from "../plugins/plugins.ts";
import { Registry, type RegistryOptions, type ToolsetSource } from "../registry/registry.ts";
import { holdsFilesOrCommands } from "../sandbox/grant.ts";
import { liftedWhy } from "../config/protected_paths.ts";
import {
  riskyWorkspace,
  riskyWorkspaceError,
  UNSAFE_WORKSPACE_FLAG,
} from "../config/risky_workspace.ts";
import type { Reporter } from "../tool/reporter.ts";
import { type CliValues, UsageError } from "./options.ts";
import { makeScratch } from "./scratch.ts";
import { OWN_DIR, userCwd } from "./user_cwd.ts";

/** The folder the user ran corral from (see core/cli/user_cwd.ts). */
export { userCwd };

/**
 * The workspace (`--workspace`, else the folder the user ran corral from)
 * and the config. The workspace is never corral's own folder: that is part
 * of the trust base no tool may write.
 */
export async function workspaceConfig(
  values: CliValues,
  options: { scratch?: boolean } = {},
): Promise<{ config: CorralConfig & { ignored?: string }; workspace: string }> {
  let workspace: string;
  let given = values.workspace ?? userCwd();
  // Run from corral's own folder without --workspace (`deno task corral …` in the clone):
  // that folder is never a workspace, so an empty scratch one stands in, and corral says so.
  if (!values.workspace && _own(_real(given))) {
    given = await makeScratch("corral-scratch-");
    if (!options.scratch) {
      console.error(
        `corral: corral's own folder is never a workspace; using an empty scratch workspace ` +
          `${given} (run corral from your project's folder, or pass --workspace DIR)`,
      );
    }
  }
  try {
    workspace = Deno.realPathSync(given);
    if (!Deno.statSync(workspace).isDirectory) throw new Error("not a directory");
  } catch (err) {
    const reason = err instanceof Deno.errors.NotFound
      ? "no such directory"
      : (err as Error).message;
    throw new UsageError(`--workspace "${values.workspace ?? given}": ${reason}`);
  }
  if (_own(workspace)) {
    throw new UsageError(
      `the workspace would be ${
        workspace === INSTALL_DIR || workspace === OWN_DIR
          ? "corral's own folder"
          : "inside corral's own folder"
      } (${workspace}), which no tool may change: run corral from your project's folder ` +
        `or pass --workspace DIR`,
    );
  }
  // HOME, /, a PATH folder, corral's own folders: refused unless the operator says so.
  const risky = riskyWorkspace(workspace);
  if (risky && !values["unsafe-workspace"]) {
    throw new UsageError(riskyWorkspaceError(workspace, risky));
  }
  if (risky) {
    console.error(
      `corral: warning: the workspace ${workspace} is ${risky} (${UNSAFE_WORKSPACE_FLAG})`,
    );
  }
  // --config, else the project's corral.json once trusted (corral trust), else the user's.
  const config = values.config
    ? await loadConfig({ file: values.config, workspace })
    : (await trustedConfig(workspace)) ?? await loadConfig({ workspace });
  return { config, workspace };
}

/** The policy: --permissions, else the project's permissions.json once trusted, else the user's. */
export async function policyFor(values: CliValues, workspace: string): Promise<Policy> {
  if (values.permissions) return await loadPolicy({ file: values.permissions, workspace });
  return (await trustedPolicy(workspace)) ?? await loadPolicy({ workspace });
}

/** What `--watch` needs to scan the plugin directories again. */
export interface PluginScan {
  policy: Policy;
  config: CorralConfig;
  workspace: string;
  /** Where relative `CORRAL_TOOL_DIRS` entries resolve. */
  envBase: string;
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

/**
 * Build the registry for a command: letters, policy, config, plugins, audit.
 * The "full privileges" warning is said where it informs (the human `list`,
 * the `mcp` banner); `call` and `--json` keep stderr for the call.
 */
export async function openRegistry(
  values: CliValues,
  reporter: Reporter,
  command?: string,
): Promise<CliSession> {
  const human = command !== "call" && !values.json;
  let letters = ["r", "w", "x", "n"].filter((l) => values[l as "r"]).join("");
  if (letters === "") {
    letters = "rwxn";
    if (command === "mcp" || (command === "list" && human)) {
      reporter.line(
        "Warning: corral runs with full privileges (r w x n); limit them with -r -w -x -n",
        "yellow",
      );
    }
  }
  const { config, workspace } = await workspaceConfig(values);
  const policy: Policy & { ignored?: string } = await policyFor(values, workspace);
  for (const [file, flag] of [[policy.ignored, "--permissions"], [config.ignored, "--config"]]) {
    if (!file) continue;
    reporter.line(
      `Warning: ignoring ${file}: a file in the workspace is used only once trusted ` +
        `(a tool may be able to write it); review it and run "corral trust", or pass ${flag} ${file}`,
      "yellow",
    );
  }
  // A relative CORRAL_TOOL_DIRS entry means the folder the user typed it in.
  // corral's example plugins load only in `corral demo` (or where the user names their folder).
  const examples = command === "demo";
  const plugins = await pluginSources({ policy, config, workspace, envBase: userCwd(), examples });
  _warnUnknownPlugins(policy, plugins.sources, reporter);
  const options: RegistryOptions = {
    privileges: letters,
    toolsets: [...new Set([...config.toolsets, ...(values.toolset ?? [])])],
    policy,
    workspace,
    sources: plugins.sources,
    reporter,
    servers: config.servers,
  };
  if (values["no-cache"]) options.cacheDir = null;
  // The config in use and every plugin directory (found or not) are part of the trust base.
  options.trusted = [
    ...(config.file ? [{ path: config.file, what: "the config file", secret: true }] : []),
    ...plugins.dirs.map((d) => ({ path: d.real, what: "a plugin directory" })),
    // Configured ones that do not exist yet: no tool may create them either.
    ...[...config.toolDirs, ...splitToolDirs(envVar(TOOL_DIRS_ENV), userCwd())].map((path) => ({
      path,
      what: "a plugin directory",
    })),
  ];
  // The operator's extra trust store, for every sandbox (core/guard/trust_store.ts).
  if (values["ca-file"]?.length) {
    try {
      useCaFiles(values["ca-file"].map((f) => resolve(userCwd(), f)));
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  const audit = values.audit ?? config.audit;
  if (audit) options.auditPath = audit;
  if (!config.auditRequired) options.auditOptional = true;
  // Load problems and rejected files: one line that points to `corral list`, not a
  // screenful on every command (list itself shows them in full).
  options.quietProblems = true;
  const registry = await Registry.create(options);
  const skipped = registry.problems.length + plugins.warnings.length;
  if (skipped && human) {
    reporter.line(
      `Warning: ${skipped} plugin file${skipped === 1 ? "" : "s"} or module${
        skipped === 1 ? "" : "s"
      } skipped (corral list says why)`,
      "yellow",
    );
  }
  _warnOptOuts(registry, reporter);
  return {
    registry,
    reporter,
    pluginWarnings: plugins.warnings,
    plugins: {
      policy,
      config,
      workspace,
      envBase: userCwd(),
      dirs: plugins.dirs.map((d) => d.real),
    },
  };
}

/** The banner says when tools run without the namespace, and which limits are in force. */
function _warnOptOuts(registry: Registry, reporter: Reporter): void {
  const open = new Map<string, string[]>();
  for (const t of registry.loaded()) {
    if (t.jail !== "none" || !holdsFilesOrCommands(t.grant)) continue;
    const why = t.isolation === "worker" ? `isolation "worker"` : `"jail": "off"`;
    open.set(why, [...(open.get(why) ?? []), t.name]);
  }
  for (const [why, names] of open) {
    reporter.line(
      `Warning: ${names.length} tool${names.length > 1 ? "s" : ""} run WITHOUT the sandbox ` +
        `namespace (${why} in the policy): ${names.join(", ")}`,
      "yellow",
    );
  }
  // An operator who lifts a protected path hears it at every start (README, Protected files).
  for (const entry of registry.policy.unprotected) {
    reporter.line(
      `Warning: permissions.json lifts the protection of "${entry}" (unprotect): tools with a ` +
        `write grant may change it, and ${liftedWhy(entry)} outside the sandbox`,
      "yellow",
    );
  }
  // Without a cgroup and as root, process sandboxes are refused unless the policy opts out.
  const missing = limitsMissing(false);
  if (missing) reporter.line(`Warning: ${missing}`, "yellow");
}

/** A `plugins.NAME` entry of the policy that no plugin matches is most likely a typo: say so. */
function _warnUnknownPlugins(policy: Policy, sources: ToolsetSource[], reporter: Reporter): void {
  const names = new Set<string>();
  for (const s of sources) {
    names.add(s.id);
    names.add(s.id.replace(/^(plugin:.*\/|package:)/, ""));
    const own = s.policy.own?.replace(/^plugins\./, "");
    if (own) names.add(own);
    if (s.policy.where.startsWith("plugins.")) names.add(s.policy.where.slice("plugins.".length));
  }
  for (const key of policy.pluginNames()) {
    if (names.has(key)) continue;
    const near = closestNames(
      key,
      [...names].filter((n) => !n.includes(":")),
      2,
      Math.max(2, Math.floor(key.length / 3)),
    );
    reporter.line(
      `Warning: ${policy.file}: plugins.${key}: no plugin has that name` +
        (near.length ? ` (did you mean: ${near.join(", ")}?)` : ""),
      "yellow",
    );
  }
}

/** Inside corral's own folder, by its name or its real path (started through a symlink). */
function _own(path: string): boolean {
  return isWithin(path, INSTALL_DIR) || isWithin(path, OWN_DIR);
}

function _real(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}
