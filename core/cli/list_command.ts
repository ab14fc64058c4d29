/**
 * `corral list [--json]`: every tool, loaded or not, with its toolset,
 * letters, isolation, grant, jail and status; then the modules and plugin
 * files that were skipped.
 *
 * @module
 */
import { colour } from "../tool/reporter.ts";
import type { CliSession } from "./open_registry.ts";
import type { CliValues } from "./options.ts";
import { out } from "./output.ts";
import { toolTable } from "./tool_table.ts";

/** Run `corral list`; returns the exit code. */
export function listCommand(values: CliValues, session: CliSession, color: boolean): number {
  const { registry, pluginWarnings } = session;
  if (values.json) {
    out(JSON.stringify(
      registry.list().map((t) => ({
        name: t.name,
        toolset: t.toolset,
        permissions: t.permissions,
        status: t.status,
        reason: t.reason ?? null,
        source: t.source,
        isolation: t.isolation,
        jail: t.jail ?? null,
        grant: t.grant,
      })),
      null,
      2,
    ));
    return 0;
  }
  for (const row of toolTable(registry.list(), color)) out(row);
  for (const p of registry.problems) out(colour(`skipped module: ${p.message}`, "yellow", color));
  for (const w of pluginWarnings) out(colour(`skipped plugin: ${w}`, "yellow", color));
  return 0;
}
