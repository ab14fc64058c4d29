/**
 * A call's result with what its settlement did (core/layers/): the report
 * is marked on the result for the audit line, and a change that was not
 * applied (refused by corral's rules, or in conflict with a change made
 * meanwhile) makes the call fail, saying which and why, so that the model
 * does not take for written what never reached the workspace.
 *
 * @module
 */
import { type ChangeReport, notAppliedText, withChanges } from "../layers/mod.ts";
import type { Settles } from "./last_changes.ts";
import {
  type CallFault,
  failure,
  faultOf,
  parseFault,
  type ToolResult,
  withFault,
} from "../tool/mod.ts";
import type { SandboxMessage } from "./protocol.ts";

/**
 * The ToolResult of a sandbox's answer, whatever it sent, and corral's
 * fault mark on it (from the result, or from the message).
 */
export function resultOf(msg: SandboxMessage, tool: string): {
  result: ToolResult;
  fault: CallFault | undefined;
} {
  const r = msg.type === "result" ? msg.result : undefined;
  const bad = r === undefined ? "no result" : "malformed result";
  const result = r && typeof r === "object" && !Array.isArray(r) && typeof r.success === "boolean"
    ? r
    : withFault(failure(tool, `${bad} from sandbox`), "error", "crashed");
  const fault = faultOf(result) ?? (msg.type === "result" ? parseFault(msg.fault) : undefined);
  return { result, fault };
}

/**
 * Settle `layers` (a sandbox's, or what settled when it ended under the
 * call: ./last_changes.ts) after a call and mark its result ({@link settled});
 * a failed settlement fails it.
 */
export async function settleAfter(
  layers: Settles | undefined,
  result: ToolResult,
  tool: string,
): Promise<ToolResult> {
  if (!layers) return result;
  let report: ChangeReport;
  try {
    report = await layers.settle();
  } catch (err) {
    return withFault(
      failure(tool, `its changes could not be settled: ${(err as Error).message}`),
      "error",
      "settle",
    );
  }
  const note = layers.view?.note;
  return settled(note ? withStaleView(result, note) : result, report, tool);
}

/**
 * `result` with `stale_view`: what the sandbox's view of the workspace
 * could not be refreshed for (core/layers/view_refresh.ts), so that the
 * model does not take a stale view for the workspace.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withStaleView } from "./settled_result.ts";
 * import { faultOf, withFault } from "../tool/mod.ts";
 * const r = withStaleView(withFault({ success: false, error: "x" }, "error", "threw"), "a.txt is open");
 * assert.equal(r.stale_view, "a.txt is open");
 * assert.equal(faultOf(r)?.reason, "threw");
 * ```
 */
export function withStaleView(result: ToolResult, note: string): ToolResult {
  const out: ToolResult = { ...result, stale_view: note };
  const fault = faultOf(result);
  return fault ? withFault(out, fault.outcome, fault.reason) : out;
}

/**
 * `result` marked with `report`; failed when some changes were not applied.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { settled } from "./settled_result.ts";
 * import { changesOf, emptyReport } from "../layers/mod.ts";
 * const ok = settled({ success: true }, { ...emptyReport(), created: 1 }, "X");
 * assert.equal(ok.success, true);
 * assert.equal(changesOf(ok)?.created, 1);
 * const r = { ...emptyReport(), refused: [{ path: ".envrc", why: "protected" }] };
 * const bad = settled({ success: true }, r, "X");
 * assert.equal(bad.success, false);
 * assert.match(String(bad.error), /Cannot apply the changes of tool "X": .*\.envrc/);
 * ```
 */
export function settled(result: ToolResult, report: ChangeReport, tool: string): ToolResult {
  if (report.held) result = { ...result, held_changes: heldNote(report.held) };
  const text = notAppliedText(report);
  if (!text) return withChanges(result, report);
  const why = `Cannot apply the changes of tool "${tool}": ${text}`;
  const failed: ToolResult = {
    ...result,
    success: false,
    error: result.success || !result.error ? why : `${result.error}; ${why}`,
  };
  const fault = faultOf(result);
  const out = fault ? withFault(failed, fault.outcome, fault.reason) : failed;
  return withChanges(
    report.conflicts.length
      ? withFault(out, "error", "conflict")
      : withFault(out, "denied", "changes"),
    report,
  );
}

/**
 * What a result says of changes held for review (its `held_changes`):
 * their ID, how many, the first paths, and what to do.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { heldNote } from "./settled_result.ts";
 * const n = heldNote({ id: "0a1b2c3d", entries: 2, paths: ["+a.txt", "-b.txt"] });
 * assert.equal(n.id, "0a1b2c3d");
 * assert.match(n.note, /held for review.*corral changes show 0a1b2c3d/);
 * ```
 */
export function heldNote(held: NonNullable<ChangeReport["held"]>): {
  id: string;
  changes: number;
  paths: string[];
  note: string;
} {
  return {
    id: held.id,
    changes: held.entries,
    paths: held.paths,
    note: `${held.entries} change(s) of this call are held for review as ${held.id}, not ` +
      `applied to the workspace: later calls do not see them until they are applied ` +
      `(corral changes show ${held.id}; corral changes apply ${held.id})`,
  };
}
