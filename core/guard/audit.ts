/**
 * The audit trail: one JSON line per tool call, appended to a file and
 * flushed per call (reading and summing it up: ./audit_query.ts).
 *
 * A line is written with ONE append-mode write of the whole line (the file
 * is opened `O_APPEND` by its path for each line, so the kernel places each
 * write at the end, and a log rotated, removed or replaced is followed at
 * once), and the writes of one process are synchronous, one after another,
 * so concurrent calls never interleave a line. The price of synchronous
 * writes: a log on a file system that hangs holds up the whole process, not
 * only the calls waiting for their lines (a local file takes ≈ 3 µs).
 *
 * @module
 */
import { faultOf, type ToolResult } from "../tool/result.ts";
import type { Grant } from "../tool/tool.ts";
import { boundedJson, canonicalJson } from "./audit_json.ts";

export { boundedJson, type BoundedJsonLimits, canonicalJson } from "./audit_json.ts";
export {
  type AuditFilter,
  type AuditSummaryRow,
  formatAuditSummary,
  parseSince,
  parseTime,
  readAudit,
  summarizeAudit,
} from "./audit_query.ts";
export { argShape } from "./audit_shape.ts";

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
  /** The names of the secrets put in at egress (core/guard/egress_inject.ts), never values. */
  injected?: string[];
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
  // WebCrypto here, ./sha256.ts elsewhere: the tests compare the two.
  const bytes = new TextEncoder().encode(canonicalJson(value));
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Classify a call's result: `success`; what corral marked on it
 * (core/tool/result.ts `withFault`: a throw, a crash, a timeout, a refusal);
 * `denied` for a refusal in words (a permission error, a policy, a missing
 * grant, arguments over a limit or invalid); else the tool's own `failure`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { classifyResult } from "./audit.ts";
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
 * import { outcomeOf } from "./audit.ts";
 * assert.ok(outcomeOf({ success: false, error: 'Cannot run tool "X": permission denied: no' }) === "denied");
 * ```
 */
export function outcomeOf(result: ToolResult): AuditOutcome {
  return classifyResult(result).outcome;
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
 * await log.append({ time: new Date().toISOString(), tool: "X", toolset: "t", source: "builtin", letters: "", grant: null, isolation: "worker", args_sha256: "", duration_ms: 1, outcome: "success", identity: "local", session: "local" });
 * assert.ok((await Deno.readTextFile(path)).endsWith("\n"));
 * ```
 */
export class AuditLog {
  readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  /**
   * Throw when a line could not be written now (the file cannot be opened
   * for appending): the caller refuses the call instead of running it
   * unaudited. Synchronous open and close (≈ 2 µs; the async ones cost
   * ≈ 16 µs and an event-loop turn at every call).
   */
  check(): Promise<void> {
    try {
      Deno.openSync(this.path, { append: true, create: true }).close();
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Append one record as one line (one write, append mode: the file is
   * opened `O_APPEND` for it, by its path, as {@link check} did). Encoding
   * never throws: a record JSON cannot hold is written with its `args`
   * replaced by a marker (or, failing that, its plain fields only); only a
   * failed write rejects. The write is synchronous (open, one write, close:
   * ≈ 3 µs against ≈ 35 µs for the async one), so the lines of one process
   * are written one after another in call order, never interleaved.
   */
  append(
    record: AuditRecord | AuditConnectionRecord | AuditAskRecord | AuditChangesRecord,
  ): Promise<void> {
    try {
      Deno.writeTextFileSync(this.path, _encodeLine(record), { append: true, create: true });
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
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
