/**
 * Questions to an audit log (./audit.ts): its call lines filtered by
 * identity, session, tool, outcome and time, and the summary per tool that
 * `corral audit` prints.
 *
 * @module
 */
import { rotatedPaths } from "./audit.ts";
import {
  AUDIT_OUTCOMES,
  type AuditOutcome,
  type AuditRecord,
  type AuditRefusalsRecord,
} from "./audit_record.ts";

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

/** What {@link readAudit} found. */
export interface AuditRead {
  /** The call lines that match, oldest first. */
  records: AuditRecord[];
  /** The lines that count refusals (`kind: "refusals"`) that match, oldest first. */
  refusals: AuditRefusalsRecord[];
  /** Lines that are not JSON records. */
  bad: number;
}

/**
 * Read an audit log's call lines, its rotated files first (oldest to
 * newest, ./audit.ts `rotatedPaths`); lines that are not JSON records are
 * counted in `bad`, not thrown. Outcomes of older lines (`ok`, `timeout`,
 * `crashed`) are read as `success` and `error` with their reason. Lines
 * that count refusals are returned apart.
 *
 * @example
 * ```ts ignore
 * import { readAudit } from "./audit_query.ts";
 * const { records } = await readAudit("audit.jsonl", { tool: "RunBashCode", outcome: "denied" });
 * ```
 */
export async function readAudit(path: string, filter: AuditFilter = {}): Promise<AuditRead> {
  const out: AuditRead = { records: [], refusals: [], bad: 0 };
  for (const file of [...rotatedPaths(path).reverse(), path]) {
    let text: string;
    try {
      text = await Deno.readTextFile(file);
    } catch (err) {
      if (file !== path && err instanceof Deno.errors.NotFound) continue;
      throw err;
    }
    _readLines(text, filter, out);
  }
  return out;
}

function _readLines(text: string, filter: AuditFilter, out: AuditRead): void {
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let r: AuditRecord;
    try {
      r = JSON.parse(line);
    } catch {
      out.bad++;
      continue;
    }
    const kind = r && typeof r === "object" ? (r as { kind?: string }).kind : undefined;
    if (kind === "refusals") {
      const t = r as unknown as AuditRefusalsRecord;
      if (_refusalsMatch(t, filter)) out.refusals.push(t);
      continue;
    }
    // Connections, questions, hosted servers' events and authentication are lines of their own.
    if (kind !== undefined) continue;
    if (!r || typeof r !== "object" || typeof r.tool !== "string") {
      out.bad++;
      continue;
    }
    const legacy = _LEGACY[r.outcome as string];
    if (legacy) r = { ...r, ...legacy, ...(r.reason ? { reason: r.reason } : {}) };
    if (_matches(r, filter)) out.records.push(r);
  }
}

function _refusalsMatch(r: AuditRefusalsRecord, f: AuditFilter): boolean {
  if (typeof r.count !== "number" || !r.tools || typeof r.tools !== "object") return false;
  if (f.identity !== undefined && r.identity !== f.identity) return false;
  if (f.outcome !== undefined && f.outcome !== "denied") return false;
  if (f.tool !== undefined && !Object.hasOwn(r.tools, f.tool)) return false;
  if (f.session !== undefined) return false; // counted refusals name no session
  const t = Date.parse(r.time);
  if (f.since && !(t >= f.since.getTime())) return false;
  if (f.until && !(Date.parse(r.since) < f.until.getTime())) return false;
  return true;
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
 * Counted refusals (`refusals`) add to their tools' calls and `denied`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { summarizeAudit } from "./audit_query.ts";
 * const rows = summarizeAudit([{ tool: "A", outcome: "success", duration_ms: 5 } as any]);
 * assert.ok(rows[0].calls === 1 && rows[0].p50_ms === 5);
 * const more = summarizeAudit([], [{ tools: { A: 7 } } as any]);
 * assert.ok(more[0].calls === 7 && more[0].counts.denied === 7);
 * ```
 */
export function summarizeAudit(
  records: AuditRecord[],
  refusals: Array<Pick<AuditRefusalsRecord, "tools">> = [],
): AuditSummaryRow[] {
  const by = new Map<string, AuditRecord[]>();
  for (const r of records) by.set(r.tool, [...(by.get(r.tool) ?? []), r]);
  const counted = new Map<string, number>();
  for (const r of refusals) {
    for (const [tool, n] of Object.entries(r.tools)) {
      if (typeof n !== "number") continue;
      counted.set(tool, (counted.get(tool) ?? 0) + n);
      if (!by.has(tool)) by.set(tool, []);
    }
  }
  return [...by.keys()].sort().map((tool) => {
    const rs = by.get(tool)!;
    const counts = Object.fromEntries(AUDIT_OUTCOMES.map((o) => [o, 0])) as Record<
      AuditOutcome,
      number
    >;
    for (const r of rs) if (r.outcome in counts) counts[r.outcome]++;
    const more = counted.get(tool) ?? 0;
    counts.denied += more;
    const d = rs.map((r) => Number(r.duration_ms) || 0).sort((a, b) => a - b);
    return {
      tool,
      calls: rs.length + more,
      counts,
      p50_ms: d[Math.floor((d.length - 1) / 2)] ?? 0,
    };
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
    // Whatever a caller named its tool, it is one cell: every control character escaped.
    escapeField(r.tool, 80),
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

// deno-lint-ignore no-control-regex
const _UNSAFE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * A field of an audit line made safe to print on one line of a terminal:
 * every control character (line feeds and tabs too), line separator and
 * bidirectional override escaped as `\uXXXX`, and cut to `max` characters.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { escapeField } from "./audit_query.ts";
 * assert.equal(escapeField("Read\nFAKE 1 1"), "Read\\u000aFAKE 1 1");
 * assert.equal(escapeField("a\u202eb"), "a\\u202eb");
 * assert.equal(escapeField("abcdef", 3), "abc…");
 * ```
 */
export function escapeField(text: string, max = Infinity): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return cut.replace(_UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * A record as one JSON line that is safe on a terminal: JSON already
 * escapes C0 controls and line feeds; DEL, C1 controls, line separators and
 * bidirectional overrides are escaped too (still valid JSON).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { safeJsonLine } from "./audit_query.ts";
 * const line = safeJsonLine({ tool: "a\nb\u009b31m" });
 * assert.ok(!/[\n\u009b]/.test(line) && JSON.parse(line).tool === "a\nb\u009b31m");
 * ```
 */
export function safeJsonLine(record: unknown): string {
  return JSON.stringify(record).replace(
    _UNSAFE,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
