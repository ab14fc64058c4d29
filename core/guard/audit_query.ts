/**
 * Questions to an audit log (./audit.ts): its call lines filtered by
 * identity, session, tool, outcome and time, and the summary per tool that
 * `corral audit` prints.
 *
 * @module
 */
import { AUDIT_OUTCOMES, type AuditOutcome, type AuditRecord } from "./audit.ts";

/** Outcomes of lines written before corral knew `success` and `failure`. */
const _LEGACY: Record<string, { outcome: AuditOutcome; reason?: string }> = {
  ok: { outcome: "success" },
  timeout: { outcome: "error", reason: "timeout" },
  crashed: { outcome: "error", reason: "crashed" },
};

/**
 * Parse a time of `--since` or `--until`: an ISO date/time, or a duration
 * before `now` such as `30m`, `1h`, `2d`, `45s`. Throws a `TypeError`
 * naming `option` for anything else.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseTime } from "./audit_query.ts";
 * const now = new Date("2026-01-01T12:00:00Z");
 * assert.ok(parseTime("1h", "--until", now).toISOString() === "2026-01-01T11:00:00.000Z");
 * ```
 */
export function parseTime(text: string, option: string, now: Date = new Date()): Date {
  const m = /^(\d+)\s*(s|m|h|d)$/.exec(text.trim());
  if (m) {
    const unit = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[m[2] as "s"];
    return new Date(now.getTime() - Number(m[1]) * unit);
  }
  // A bare number is no time: Date.parse would read "5" as the year 2001.
  const t = /^\d+$/.test(text.trim()) ? NaN : Date.parse(text);
  if (Number.isNaN(t)) {
    throw new TypeError(
      `${option} must be an ISO time or a duration like 30m, 1h, 2d; got "${text}"`,
    );
  }
  return new Date(t);
}

/**
 * Parse `--since` (see {@link parseTime}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSince } from "./audit_query.ts";
 * const now = new Date("2026-01-01T12:00:00Z");
 * assert.ok(parseSince("1h", now).toISOString() === "2026-01-01T11:00:00.000Z");
 * ```
 */
export function parseSince(text: string, now: Date = new Date()): Date {
  return parseTime(text, "--since", now);
}

/** Filters of {@link readAudit}: a line must match every one given. */
export interface AuditFilter {
  tool?: string;
  identity?: string;
  session?: string;
  outcome?: AuditOutcome;
  /** Calls that started at or after this time. */
  since?: Date;
  /** Calls that started before this time. */
  until?: Date;
}

/**
 * Read an audit file's call lines; lines that are not JSON records are
 * counted in `bad`, not thrown. Outcomes of older lines (`ok`, `timeout`,
 * `crashed`) are read as `success` and `error` with their reason.
 *
 * @example
 * ```ts ignore
 * import { readAudit } from "./audit_query.ts";
 * const { records } = await readAudit("audit.jsonl", { tool: "RunBashCode", outcome: "denied" });
 * ```
 */
export async function readAudit(
  path: string,
  filter: AuditFilter = {},
): Promise<{ records: AuditRecord[]; bad: number }> {
  const text = await Deno.readTextFile(path);
  const records: AuditRecord[] = [];
  let bad = 0;
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let r: AuditRecord;
    try {
      r = JSON.parse(line);
    } catch {
      bad++;
      continue;
    }
    const kind = r && typeof r === "object" ? (r as { kind?: string }).kind : undefined;
    // Connections, questions and hosted servers' events are lines of their own, not calls.
    if (kind === "connection" || kind === "ask" || kind === "server") continue;
    if (!r || typeof r !== "object" || typeof r.tool !== "string") {
      bad++;
      continue;
    }
    const legacy = _LEGACY[r.outcome as string];
    if (legacy) r = { ...r, ...legacy, ...(r.reason ? { reason: r.reason } : {}) };
    if (_matches(r, filter)) records.push(r);
  }
  return { records, bad };
}

function _matches(r: AuditRecord, f: AuditFilter): boolean {
  if (f.tool !== undefined && r.tool !== f.tool) return false;
  if (f.identity !== undefined && r.identity !== f.identity) return false;
  if (f.session !== undefined && r.session !== f.session) return false;
  if (f.outcome !== undefined && r.outcome !== f.outcome) return false;
  const t = Date.parse(r.time);
  if (f.since && !(t >= f.since.getTime())) return false;
  if (f.until && !(t < f.until.getTime())) return false;
  return true;
}

/** One row of the summary. */
export interface AuditSummaryRow {
  tool: string;
  calls: number;
  counts: Record<AuditOutcome, number>;
  /** Median duration (ms), the lower middle value for an even count. */
  p50_ms: number;
}

/**
 * Per tool: calls, count of each outcome, median duration. Sorted by tool.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { summarizeAudit } from "./audit_query.ts";
 * const rows = summarizeAudit([{ tool: "A", outcome: "success", duration_ms: 5 } as any]);
 * assert.ok(rows[0].calls === 1 && rows[0].p50_ms === 5);
 * ```
 */
export function summarizeAudit(records: AuditRecord[]): AuditSummaryRow[] {
  const by = new Map<string, AuditRecord[]>();
  for (const r of records) by.set(r.tool, [...(by.get(r.tool) ?? []), r]);
  return [...by.keys()].sort().map((tool) => {
    const rs = by.get(tool)!;
    const counts = Object.fromEntries(AUDIT_OUTCOMES.map((o) => [o, 0])) as Record<
      AuditOutcome,
      number
    >;
    for (const r of rs) if (r.outcome in counts) counts[r.outcome]++;
    const d = rs.map((r) => Number(r.duration_ms) || 0).sort((a, b) => a - b);
    return { tool, calls: rs.length, counts, p50_ms: d[Math.floor((d.length - 1) / 2)] ?? 0 };
  });
}

/**
 * The summary as a text table.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatAuditSummary } from "./audit_query.ts";
 * assert.ok(formatAuditSummary([]).includes("no calls"));
 * ```
 */
export function formatAuditSummary(rows: AuditSummaryRow[]): string {
  if (rows.length === 0) return "no calls";
  const head = ["tool", "calls", ...AUDIT_OUTCOMES, "p50_ms"];
  const body = rows.map((r) => [
    r.tool,
    String(r.calls),
    ...AUDIT_OUTCOMES.map((o) => String(r.counts[o])),
    String(Math.round(r.p50_ms)),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const fmt = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ")
      .trimEnd();
  return [fmt(head), ...body.map(fmt)].join("\n");
}
