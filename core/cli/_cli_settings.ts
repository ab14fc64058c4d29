/**
 * The settings of a command, from its command line: the workspace (never
 * corral's own folder) and every setting resolved once by
 * core/config/settings.ts. Light on purpose: commands that need no registry
 * (`config`, `audit`, `tokens`, `new`) import this, not the registry.
 *
 * @module
 */
import {
  INSTALL_DIR,
  resolveSettings,
  riskyWorkspace,
  riskyWorkspaceError,
  type Settings,
  UNSAFE_WORKSPACE_FLAG,
} from "../config/mod.ts";
import { isWithin } from "../jail/mod.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { makeScratch } from "./_scratch.ts";
import { OWN_DIR, userCwd } from "./_user_cwd.ts";

/**
 * The workspace: `--workspace`, else the folder the user ran corral from;
 * never corral's own folder (part of the trust base no tool may write).
 * Run from there without `--workspace`, an empty scratch workspace stands
 * in (said on stderr unless `quiet`).
 */
export async function cliWorkspace(
  values: CliValues,
  options: { quiet?: boolean } = {},
): Promise<{ workspace: string; from: string }> {
  let given = values.workspace ?? userCwd();
  let from = values.workspace ? "--workspace" : "the folder corral was run from";
  // Run from corral's own folder without --workspace (`deno task corral …` in the clone):
  // that folder is never a workspace, so an empty scratch one stands in, and corral says so.
  if (!values.workspace && _own(_real(given))) {
    given = await makeScratch("corral-scratch-");
    from = "a scratch folder (corral's own folder is never a workspace)";
    if (!options.quiet) {
      console.error(
        `corral: corral's own folder is never a workspace; using an empty scratch workspace ` +
          `${given} (run corral from your project's folder, or pass --workspace DIR)`,
      );
    }
  }
  let workspace: string;
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
      `Warning: the workspace ${workspace} is ${risky} (${UNSAFE_WORKSPACE_FLAG})`,
    );
  }
  return { workspace, from };
}

/**
 * Every setting of a command, resolved once (core/config/settings.ts) from
 * the command line: the layers of permissions.json and corral.json, the
 * letters, the audit log, the plugin directories.
 */
export async function cliSettings(
  values: CliValues,
  options: { quiet?: boolean; examples?: boolean } = {},
): Promise<Settings> {
  const { workspace, from } = await cliWorkspace(values, options);
  return await resolveSettings({
    workspace,
    workspaceFrom: from,
    permissions: values.permissions,
    config: values.config,
    audit: values.audit,
    auditMaxBytes: auditMaxBytes(values["audit-max-bytes"]) ?? undefined,
    sharedState: values["shared-state"],
    toolsets: values.toolset,
    letters: ["r", "w", "x", "n"].filter((l) => values[l as "r"]).join(""),
    noCache: values["no-cache"],
    examples: options.examples,
    envBase: userCwd(),
  });
}

/**
 * `--audit-max-bytes BYTES`: the audit log's total with its rotated files
 * (0: no rotation); null when not given. Anything else is a {@link UsageError}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { auditMaxBytes } from "./_cli_settings.ts";
 * assert.equal(auditMaxBytes("1048576"), 1048576);
 * assert.equal(auditMaxBytes(undefined), null);
 * assert.throws(() => auditMaxBytes("1MB"), /--audit-max-bytes/);
 * ```
 */
export function auditMaxBytes(text: string | undefined): number | null {
  if (text === undefined) return null;
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n)) {
    throw new UsageError(
      `--audit-max-bytes must be a number of bytes (0: no rotation), got "${text}"`,
    );
  }
  return n;
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
