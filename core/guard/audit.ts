/**
 * The audit trail: one JSON line per tool call, appended to a file and
 * flushed per call, and the summary that `corral audit` prints.
 *
 * A line is written with ONE append-mode write of the whole line (the file
 * is opened `O_APPEND`, so the kernel places each write at the end), and
 * writes of one process are queued, so concurrent calls never interleave a
 * line.
 *
 * @module
 */
import type { ToolResult } from "../tool/result.ts";
import type { Grant } from "../tool/tool.ts";
import { boundedJson, canonicalJson } from "./audit_json.ts";

export { boundedJson, type BoundedJsonLimits, canonicalJson } from "./audit_json.ts";

/** How a call ended. */
export type AuditOutcome = "ok" | "error" | "timeout" | "denied" | "crashed";

/** Every outcome, in summary column order. */
export const AUDIT_OUTCOMES: readonly AuditOutcome[] = [
  "ok",
  "error",
  "timeout",
  "denied",
  "crashed",
];

/** One audit line. */
export interface AuditRecord {
  /** ISO time the call started. */
  time: string;
  tool: string;
  /** The toolset id (`files`, `plugin:<dir>/<stem>`, `package:<spec>`). */
  toolset: string;
  /** `builtin`, `plugin` or `package`. */
  source: string;
  /** The tool's permission letters. */
  letters: string;
  /** The effective grant of the call. */
  grant: Grant | null;
  isolation: string;
  /** `bwrap` or `none` for tools that start processes. */
  jail?: string;
  /** SHA-256 (hex) of the arguments as canonical JSON (sorted keys). */
  args_sha256: string;
  /** The arguments (secret-looking keys redacted), unless the policy says `redact_args`. */
  args?: unknown;
  /** True when `args` were cut to fit the line (deep, long or unencodable parts); the digest is of all. */
  args_truncated?: boolean;
  duration_ms: number;
  outcome: AuditOutcome;
  error?: string;
}

/**
 * A tool's question to its client (sampling, elicitation): a line of its
 * own, answered, failed or refused (`denied`, with the reason).
 */
export interface AuditAskRecord {
  time: string;
  kind: "ask";
  /** The tool whose call asked (`(no running call)` for a call that had ended). */
  tool: string;
  toolset: string;
  ask: "sample" | "elicit";
  /** `answered`, `failed: …` or `denied`. */
  outcome: string;
  /** Why an ask was refused or failed. */
  reason?: string;
  duration_ms: number;
}

/**
 * One connection through a sandbox's egress proxy (core/guard/egress.ts),
 * allowed or refused: a line of its own in the audit log, beside the calls.
 */
export interface AuditConnectionRecord {
  /** ISO time the connection ended (or was refused). */
  time: string;
  kind: "connection";
  /** The toolset whose sandbox asked. */
  toolset: string;
  host: string;
  port: number;
  /** The address connected to (or refused). */
  address: string;
  verdict: "allowed" | "refused";
  reason?: string;
  bytes_out: number;
  bytes_in: number;
}

/**
 * SHA-256 (hex) of {@link canonicalJson} of `value`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { digestArgs } from "./audit.ts";
 * assert.ok(await digestArgs({ a: 1, b: 2 }) === await digestArgs({ b: 2, a: 1 }));
 * ```
 */
export async function digestArgs(value: unknown): Promise<string> {
  const bytes = new TextEncoder().encode(canonicalJson(value));
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Classify a call's result: `ok`, `timeout`, `denied` (refused by policy,
 * confirmation, a missing grant, a permission error, arguments over a limit
 * or invalid), `crashed` (the sandbox died) or `error`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { outcomeOf } from "./audit.ts";
 * assert.ok(outcomeOf({ success: false, error: 'Cannot run tool "X": permission denied: no' }) === "denied");
 * ```
 */
export function outcomeOf(result: ToolResult): AuditOutcome {
  if (result.success) return "ok";
  if (result.timed_out === true) return "timeout";
  const e = result.error ?? "";
  const reason = e.replace(/^Cannot run tool "[^"]*": /, "");
  if (/^timed out after/.test(reason)) return "timeout";
  if (
    /^(permission denied|refused|not confirmed|needs confirmation|not loaded|arguments too (deep|large)|invalid arguments|arguments must be)/
      .test(reason)
  ) {
    return "denied";
  }
  if (
    /^sandbox (crashed|exited unexpectedly|ran out of memory|.*stopped answering|failed to start)/
      .test(reason)
  ) {
    return "crashed";
  }
  return "error";
}

/**
 * An append-only audit file. Lines of concurrent calls never interleave.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AuditLog } from "./audit.ts";
 * const path = await Deno.makeTempFile();
 * const log = new AuditLog(path);
 * await log.append({ time: new Date().toISOString(), tool: "X", toolset: "t", source: "builtin", letters: "", grant: null, isolation: "worker", args_sha256: "", duration_ms: 1, outcome: "ok" });
 * assert.ok((await Deno.readTextFile(path)).endsWith("\n"));
 * ```
 */
export class AuditLog {
  readonly path: string;
  #queue: Promise<void> = Promise.resolve();

  constructor(path: string) {
    this.path = path;
  }

  /**
   * Throw when a line could not be written now (the file cannot be opened
   * for appending): the caller refuses the call instead of running it
   * unaudited.
   */
  async check(): Promise<void> {
    const f = await Deno.open(this.path, { append: true, create: true });
    f.close();
  }

  /**
   * Append one record as one line (one write, append mode). Encoding never
   * throws: a record JSON cannot hold is written with its `args` replaced
   * by a marker (or, failing that, its plain fields only); only a failed
   * write rejects.
   */
  append(record: AuditRecord | AuditConnectionRecord | AuditAskRecord): Promise<void> {
    const line = _encodeLine(record);
    const next = this.#queue.then(() =>
      Deno.writeTextFile(this.path, line, { append: true, create: true })
    );
    this.#queue = next.catch(() => {});
    return next;
  }
}

/** One line, whatever the record holds. */
function _encodeLine(record: object): string {
  const attempts = [
    () => JSON.stringify(record),
    () => JSON.stringify({ ...record, args: "[unencodable]" }),
    () => JSON.stringify(boundedJson(record, { maxDepth: 8, maxBytes: 64 * 1024 }).value),
  ];
  for (const attempt of attempts) {
    try {
      const text = attempt();
      if (typeof text === "string") return text.replace(/\n/g, "\\n") + "\n";
    } catch { /* the next, plainer form */ }
  }
  return `{"time":${
    JSON.stringify(new Date().toISOString())
  },"error":"unencodable audit record"}\n`;
}

/**
 * Parse `--since`: an ISO date/time, or a duration before `now` such as
 * `30m`, `1h`, `2d`, `45s`. Throws a `TypeError` for anything else.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSince } from "./audit.ts";
 * const now = new Date("2026-01-01T12:00:00Z");
 * assert.ok(parseSince("1h", now).toISOString() === "2026-01-01T11:00:00.000Z");
 * ```
 */
export function parseSince(text: string, now: Date = new Date()): Date {
  const m = /^(\d+)\s*(s|m|h|d)$/.exec(text.trim());
  if (m) {
    const unit = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[m[2] as "s"];
    return new Date(now.getTime() - Number(m[1]) * unit);
  }
  const t = Date.parse(text);
  if (Number.isNaN(t)) {
    throw new TypeError(
      `--since must be an ISO time or a duration like 30m, 1h, 2d; got "${text}"`,
    );
  }
  return new Date(t);
}

/** Filters of {@link readAudit}. */
export interface AuditFilter {
  tool?: string;
  since?: Date;
}

/**
 * Read an audit file; lines that are not JSON records are counted in
 * `bad`, not thrown.
 *
 * @example
 * ```ts ignore
 * import { readAudit } from "./audit.ts";
 * const { records } = await readAudit("audit.jsonl", { tool: "RunBashCode" });
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
    if (filter.tool && r.tool !== filter.tool) continue;
    if (filter.since && !(Date.parse(r.time) >= filter.since.getTime())) continue;
    records.push(r);
  }
  return { records, bad };
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
 * import { summarizeAudit } from "./audit.ts";
 * const rows = summarizeAudit([{ tool: "A", outcome: "ok", duration_ms: 5 } as any]);
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
 * import { formatAuditSummary } from "./audit.ts";
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
