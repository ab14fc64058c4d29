/**
 * `corral audit PATH [--tool X] [--since ISO|1h|30m]`: the summary of an
 * audit log, per tool: calls, each outcome, the median duration.
 *
 * @module
 */
import { formatAuditSummary, parseSince, readAudit, summarizeAudit } from "../guard/audit.ts";
import { ConfigError } from "../tool/errors.ts";
import { type CliValues, UsageError } from "./options.ts";
import { terminalSafe } from "../tool/reporter.ts";
import { out } from "./output.ts";

/** Run `corral audit PATH`; returns the exit code. */
export async function auditCommand(values: CliValues, rest: string[]): Promise<number> {
  if (!rest[0]) throw new UsageError("audit needs the path of an audit log: corral audit PATH");
  let since: Date | undefined;
  try {
    since = values.since === undefined ? undefined : parseSince(values.since);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  let read;
  try {
    read = await readAudit(rest[0], { tool: values.tool, since });
  } catch (err) {
    throw new ConfigError(`cannot read audit log "${rest[0]}": ${(err as Error).message}`);
  }
  out(terminalSafe(formatAuditSummary(summarizeAudit(read.records))));
  if (read.bad) out(`(${read.bad} unreadable line${read.bad === 1 ? "" : "s"} skipped)`);
  return 0;
}
