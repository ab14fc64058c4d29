/**
 * What one settlement of a sandbox's write layers did to the user's tree:
 * how many paths it created, changed and removed, the first of them, the
 * bytes written, and the changes it refused or could not apply because
 * someone else changed the same path (a conflict). Carried beside a call's
 * result (not in it) to the audit line, like the result's fault mark.
 *
 * @module
 */

/** How many paths a report names at most (the counts cover every one). */
export const REPORT_PATHS = 20;

/** One change that was not applied. */
export interface NotApplied {
  /** The path, relative to the workspace when inside it. */
  path: string;
  /** Why (refused), or where the sandbox's version was kept (conflict). */
  why: string;
}

/** What a settlement applied and refused. */
export interface ChangeReport {
  created: number;
  changed: number;
  removed: number;
  /** Bytes of file content written. */
  bytes: number;
  /** The first paths, each prefixed `+` (created), `~` (changed) or `-` (removed). */
  paths: string[];
  /** Changes refused by corral's rules (core/layers/change_rules.ts). */
  refused: NotApplied[];
  /** Changes kept out because the path changed meanwhile: `why` names the kept copy. */
  conflicts: NotApplied[];
  /** Why the layer was not applied, or only in part: past its quota (./layer_quota.ts). */
  over?: string;
  /**
   * Changes applied with a narrower mode than the tool gave them
   * (core/layers/_mode_rules.ts); present only when there are some.
   */
  masked?: NotApplied[];
  /**
   * Changes held for review instead of applied (core/layers/held_writer.ts):
   * the held set's ID, how many changes it holds, the first of them
   * (`+`, `~`, `-` as in {@link paths}). Present only when some were held.
   */
  held?: { id: string; entries: number; paths: string[] };
}

/**
 * An empty report.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { emptyReport, isEmptyReport } from "./change_report.ts";
 * assert.ok(isEmptyReport(emptyReport()));
 * ```
 */
export function emptyReport(): ChangeReport {
  return { created: 0, changed: 0, removed: 0, bytes: 0, paths: [], refused: [], conflicts: [] };
}

/** Whether `r` holds nothing at all. */
export function isEmptyReport(r: ChangeReport): boolean {
  return r.created + r.changed + r.removed === 0 && r.refused.length === 0 &&
    r.conflicts.length === 0 && r.over === undefined &&
    r.held === undefined;
}

/**
 * Add `b` to `a` (in place; the path lists stay bounded).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { emptyReport, mergeReports } from "./change_report.ts";
 * const a = { ...emptyReport(), created: 1, paths: ["+a"] };
 * mergeReports(a, { ...emptyReport(), removed: 2, paths: ["-b", "-c"] });
 * assert.deepEqual([a.created, a.removed, a.paths], [1, 2, ["+a", "-b", "-c"]]);
 * ```
 */
export function mergeReports(a: ChangeReport, b: ChangeReport): ChangeReport {
  a.created += b.created;
  a.changed += b.changed;
  a.removed += b.removed;
  a.bytes += b.bytes;
  a.paths.push(...b.paths.slice(0, Math.max(0, REPORT_PATHS - a.paths.length)));
  a.refused.push(...b.refused.slice(0, Math.max(0, REPORT_PATHS - a.refused.length)));
  a.conflicts.push(...b.conflicts.slice(0, Math.max(0, REPORT_PATHS - a.conflicts.length)));
  if (b.held) {
    const h = a.held ??= { id: b.held.id, entries: 0, paths: [] };
    h.entries += b.held.entries;
    h.paths.push(...b.held.paths.slice(0, Math.max(0, REPORT_PATHS - h.paths.length)));
  }
  if (b.over !== undefined) a.over ??= b.over;
  if (b.masked?.length) {
    const m = a.masked ??= [];
    m.push(...b.masked.slice(0, Math.max(0, REPORT_PATHS - m.length)));
  }
  return a;
}

/**
 * The sentence a call's error gains when some of its changes were not
 * applied, or undefined when all were.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { emptyReport, notAppliedText } from "./change_report.ts";
 * const r = { ...emptyReport(), created: 1, refused: [{ path: ".envrc", why: "protected" }] };
 * assert.match(notAppliedText(r)!, /\.envrc: protected/);
 * assert.equal(notAppliedText(emptyReport()), undefined);
 * ```
 */
export function notAppliedText(r: ChangeReport): string | undefined {
  const parts: string[] = [];
  if (r.over) parts.push(r.over);
  if (r.conflicts.length) {
    parts.push(
      `${r.conflicts.length} change(s) conflicted with a change made meanwhile outside this ` +
        `sandbox, so the other version was kept: ` +
        r.conflicts.slice(0, 5).map((c) => `${c.path} (this call's version: ${c.why})`).join(
          "; ",
        ),
    );
  }
  if (r.refused.length) {
    parts.push(
      `${r.refused.length} change(s) were refused and not applied to the workspace: ` +
        r.refused.slice(0, 5).map((c) => `${c.path}: ${c.why}`).join("; "),
    );
  }
  if (!parts.length) return undefined;
  const done = r.created + r.changed + r.removed;
  return parts.join(". ") + `. The other ${done} change(s) were applied.`;
}

const _REPORTS = new WeakMap<object, ChangeReport>();

/**
 * Mark `result` with the changes its call made (read by the audit line).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { changesOf, emptyReport, withChanges } from "./change_report.ts";
 * const r = withChanges({ success: true }, { ...emptyReport(), created: 3 });
 * assert.equal(changesOf(r)?.created, 3);
 * ```
 */
export function withChanges<T extends object>(result: T, report: ChangeReport): T {
  _REPORTS.set(result, report);
  return result;
}

/** The changes {@link withChanges} marked on `result`, if any. */
export function changesOf(result: object): ChangeReport | undefined {
  return _REPORTS.get(result);
}
