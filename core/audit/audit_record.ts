/**
 * What an audit line says: the records of the log (one per call, ask,
 * connection, settlement apart from a call, held set applied or dropped,
 * and window of counted refusals), and how a call's result becomes its
 * outcome. Written by ./audit.ts, read back by ./audit_query.ts.
 *
 * @module
 */
import { faultOf, type Grant, type ToolResult } from "../tool/mod.ts";

/**
 * How a call ended: `success`; `failure` (the tool answered that it
 * failed); `error` (corral or the sandbox failed: a throw, a crash, a
 * timeout, a sandbox that would not start); `denied` (policy,
 * confirmation, limits, bad or oversized arguments, authentication).
 */
export type AuditOutcome = "success" | "failure" | "error" | "denied";

/** Every outcome, in summary column order. */
export const AUDIT_OUTCOMES: readonly AuditOutcome[] = ["success", "failure", "error", "denied"];

/** Who made a call: an identity (`local` on the command line and stdio) and its session. */
export interface AuditWho {
  /** The caller's identity (`default` for the server's own token, `local` on the command line). */
  identity: string;
  /** The caller's session (an MCP session's principal; `local` on the command line). */
  session: string;
}

/** One audit line. */
export interface AuditRecord extends AuditWho {
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
  /** The jail's syscall filter: `on`, `on, except unshare, clone` (granted by name), or `off`. */
  seccomp?: string;
  /** SHA-256 (hex) of the arguments as canonical JSON (sorted keys). */
  args_sha256: string;
  /** Size of the arguments as canonical JSON, in UTF-8 bytes. */
  args_bytes?: number;
  /** Their types, keys and lengths, no values (the policy's `audit_args` is `shape`, the default). */
  args_shape?: unknown;
  /** The arguments (secret-looking keys redacted), when the policy's `audit_args` is `values`. */
  args?: unknown;
  /** True when `args` or `args_shape` were cut to fit the line; the digest is of all. */
  args_truncated?: boolean;
  duration_ms: number;
  outcome: AuditOutcome;
  /** What failed or refused, in a word (`timeout`, `crashed`, `threw`, `confirmation`, …). */
  reason?: string;
  error?: string;
  /** What the call changed in its write grants (core/layers/change_report.ts), when anything. */
  changes?: unknown;
}

/**
 * A tool's question to its client (sampling, elicitation): a line of its
 * own, answered, failed or refused (`denied`, with the reason).
 */
export interface AuditAskRecord extends Partial<AuditWho> {
  time: string;
  kind: "ask";
  /** The tool whose call asked (`(no running call)` for a call that had ended). */
  tool: string;
  toolset: string;
  ask: "sample" | "elicit" | "roots";
  /** `answered`, `failed: …` or `denied`. */
  outcome: string;
  /** Why an ask was refused or failed. */
  reason?: string;
  duration_ms: number;
}

/**
 * One connection through a sandbox's egress proxy (core/egress/egress.ts),
 * allowed or refused: a line of its own in the audit log, beside the calls.
 */
export interface AuditConnectionRecord extends Partial<AuditWho> {
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
  /** The names of the secrets put in at egress (core/egress/egress_inject.ts), never values. */
  injected?: string[];
  /** A `host:port` grant's way to the proxy: its forwarder, or an npm server's own connection. */
  via?: "forwarder" | "direct";
}

/**
 * Changes to the tree settled apart from any call (by processes a call left
 * running, found when its sandbox ended; a plugin's top-level code at
 * discovery): a line of its own.
 */
export interface AuditChangesRecord extends Partial<AuditWho> {
  time: string;
  kind: "changes";
  toolset: string;
  /** What was created, changed, removed and refused (core/layers/change_report.ts). */
  changes: unknown;
}

/**
 * Changes held for review (core/layers/held_store.ts) applied or dropped by
 * the operator (`corral changes apply|drop`): a line of its own. (A held
 * call's own line says what it held: `changes.held`.)
 */
export interface AuditHeldRecord extends Partial<AuditWho> {
  time: string;
  kind: "held";
  action: "applied" | "dropped";
  /** The held set's ID. */
  held: string;
  workspace?: string;
  toolset?: string;
  tools?: string[];
  /** What applying it created, changed, removed, refused and found in conflict. */
  changes?: unknown;
}

/** The line that sums up one window's counted refusals of one identity and reason (./audit.ts `RefusalTally`). */
export interface AuditRefusalsRecord {
  /** When the window ended (ISO). */
  time: string;
  kind: "refusals";
  identity: string;
  reason: string;
  outcome: "denied";
  /** Refusals counted in the window (beyond the first, written in full). */
  count: number;
  /** When the window began (ISO). */
  since: string;
  /** The count per tool name (capped names; at most 20, the rest under `(other tools)`). */
  tools: Record<string, number>;
}

/** Any line of the log. */
export type AnyAuditRecord =
  | AuditRecord
  | AuditConnectionRecord
  | AuditAskRecord
  | AuditChangesRecord
  | AuditHeldRecord
  | AuditRefusalsRecord
  | { time: string; kind: string };

/**
 * Classify a call's result: `success`; what corral marked on it
 * (core/tool/result.ts `withFault`: a throw, a crash, a timeout, a refusal);
 * `denied` for a refusal in words (a permission error, a policy, a missing
 * grant, arguments over a limit or invalid); else the tool's own `failure`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { classifyResult } from "./audit_record.ts";
 * const r = classifyResult({ success: false, error: 'Cannot run tool "X": permission denied: no' });
 * assert.deepEqual(r, { outcome: "denied", reason: "permission" });
 * ```
 */
export function classifyResult(result: ToolResult): { outcome: AuditOutcome; reason?: string } {
  if (result.success) return { outcome: "success" };
  const fault = faultOf(result);
  if (fault) return { ...fault };
  const e = result.error ?? "";
  const reason = e.replace(/^Cannot run tool "[^"]*": /, "");
  if (result.timed_out === true || /^timed out after/.test(reason)) {
    return { outcome: "error", reason: "timeout" };
  }
  const refused = _REFUSALS.find(([re]) => re.test(reason));
  if (refused) return { outcome: "denied", reason: refused[1] };
  return { outcome: "failure" };
}

const _REFUSALS: Array<[RegExp, string]> = [
  [/^permission denied/, "permission"],
  [/^(refused|not confirmed|needs confirmation)/, "policy"],
  [/^not loaded/, "not_loaded"],
  [/^(arguments too (deep|large)|invalid arguments|arguments must be)/, "arguments"],
];

/**
 * The outcome alone of {@link classifyResult}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { outcomeOf } from "./audit_record.ts";
 * assert.ok(outcomeOf({ success: false, error: 'Cannot run tool "X": permission denied: no' }) === "denied");
 * ```
 */
export function outcomeOf(result: ToolResult): AuditOutcome {
  return classifyResult(result).outcome;
}
