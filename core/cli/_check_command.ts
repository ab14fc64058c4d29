/**
 * `corral check PATH…`: load plugin files (or directories) the way
 * discovery does, each in its own sandbox, and report every breach of the
 * tool contract. Exit 1 when any file has a problem.
 *
 * @module
 */
import { checkPlugins, formatCheckReport } from "../plugins/mod.ts";
import { cliSettings } from "./_cli_settings.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { terminalSafe } from "../tool/mod.ts";
import { out } from "./_output.ts";
import { userCwd } from "./_user_cwd.ts";

/** Run `corral check`; returns the exit code. */
export async function checkCommand(values: CliValues, rest: string[]): Promise<number> {
  if (rest.length === 0) {
    throw new UsageError("check needs at least one plugin file or directory");
  }
  const { config, workspace, policy } = await cliSettings(values, { quiet: true });
  const report = await checkPlugins(rest, {
    workspace,
    policy,
    services: config.services,
    cacheDir: null,
  });
  out(terminalSafe(formatCheckReport(report, userCwd())));
  return report.ok ? 0 : 1;
}
