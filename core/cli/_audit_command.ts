/**
 * `corral audit PATH [--identity NAME] [--tool X] [--outcome O] [--since T]
 * [--until T] [--json]`: the calls of an audit log that match every filter,
 * summed up per tool (calls, each outcome, the median duration), or as
 * JSON lines with `--json`; the log's rotated files are read too, and lines
 * that count refusals add to the counts. Every field is printed escaped.
 *
 * @module
 */
import {
  AUDIT_OUTCOMES,
  type AuditFilter,
  type AuditOutcome,
  formatAuditSummary,
  parseTime,
  readAudit,
  safeJsonLine,
  summarizeAudit,
} from "../audit/mod.ts";
import { closestNames } from "../config/mod.ts";
import { ConfigError, terminalSafe } from "../tool/mod.ts";
import { cliSettings } from "./_cli_settings.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { out } from "./_output.ts";

/** Run `corral audit [PATH]`; returns the exit code. */
export async function auditCommand(values: CliValues, rest: string[]): Promise<number> {
  const filter = auditFilter(values);
  // Without a path: the audit log the settings name (corral.json "audit", --audit).
  const path = rest[0] ?? (await cliSettings(values, { quiet: true })).audit;
  if (!path) {
    throw new UsageError(
      'audit needs the path of an audit log: corral audit PATH (no "audit" is set in ' +
        "corral.json; corral config shows the settings)",
    );
  }
  let read;
  try {
    read = await readAudit(path, filter);
  } catch (err) {
    throw new ConfigError(`cannot read audit log "${path}": ${(err as Error).message}`);
  }
  // Every field escaped (line feeds, C1 controls, bidi overrides too): whatever a caller put
  // in a tool name prints as that one field, never as a row of its own.
  if (values.json) {
    for (const r of [...read.records, ...read.refusals]) out(safeJsonLine(r));
  } else {
    out(terminalSafe(formatAuditSummary(summarizeAudit(read.records, read.refusals))));
  }
  if (read.bad) {
    const note = `(${read.bad} unreadable line${read.bad === 1 ? "" : "s"} skipped)`;
    if (values.json) console.error(note);
    else out(note);
  }
  return 0;
}

/**
 * The filter of `corral audit`'s options; a bad value is a
 * {@link UsageError} naming the option (with "did you mean" for outcomes).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { auditFilter } from "./_audit_command.ts";
 * assert.equal(auditFilter({ outcome: "denied" } as never).outcome, "denied");
 * assert.throws(() => auditFilter({ outcome: "deny" } as never), /did you mean "denied"/);
 * ```
 */
export function auditFilter(values: CliValues): AuditFilter {
  const filter: AuditFilter = {};
  if (values.tool !== undefined) filter.tool = _nonEmpty(values.tool, "--tool");
  if (values.identity !== undefined) filter.identity = _nonEmpty(values.identity, "--identity");
  if (values.outcome !== undefined) filter.outcome = _outcome(values.outcome);
  try {
    if (values.since !== undefined) filter.since = parseTime(values.since, "--since");
    if (values.until !== undefined) filter.until = parseTime(values.until, "--until");
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (filter.since && filter.until && filter.since >= filter.until) {
    throw new UsageError(
      `--since (${filter.since.toISOString()}) must be before --until (${filter.until.toISOString()})`,
    );
  }
  return filter;
}

function _nonEmpty(value: string, option: string): string {
  if (!value.trim()) throw new UsageError(`${option} needs a value`);
  return value;
}

function _outcome(value: string): AuditOutcome {
  if ((AUDIT_OUTCOMES as readonly string[]).includes(value)) return value as AuditOutcome;
  // The names of older lines (ok, timeout, crashed) point to today's.
  const old = ({ ok: "success", timeout: "error", crashed: "error" } as Record<string, string>)[
    value
  ];
  const near = old
    ? [old]
    : closestNames(value, [...AUDIT_OUTCOMES], 1, Math.max(3, value.length / 2));
  throw new UsageError(
    `--outcome must be one of ${AUDIT_OUTCOMES.join(", ")}; got "${value}"` +
      (near.length ? ` (did you mean "${near[0]}"?)` : ""),
  );
}
