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
import { faultOf, type ToolResult } from "../tool/mod.ts";
import type { Grant } from "../tool/mod.ts";
import { AUDIT_FIELD_CAP, AUDIT_LINE_CAP, capFields, capText } from "./audit_caps.ts";
import { boundedJson, canonicalJson } from "./audit_json.ts";
import { type AuditRefusalsRecord, RefusalTally } from "./audit_refusals.ts";
import { DEFAULT_AUDIT_MAX_BYTES, rotateIfFull } from "./audit_rotation.ts";

export { boundedJson, type BoundedJsonLimits, canonicalJson } from "./audit_json.ts";
export {
  type AuditFilter,
  type AuditRead,
  type AuditSummaryRow,
  escapeField,
  formatAuditSummary,
  parseSince,
  parseTime,
  readAudit,
  safeJsonLine,
  summarizeAudit,
} from "./audit_query.ts";
export { argShape } from "./audit_shape.ts";
export { type AuditRefusalsRecord, DEFAULT_REFUSAL_WINDOW_MS } from "./audit_refusals.ts";
export { DEFAULT_AUDIT_MAX_BYTES, rotatedPaths } from "./audit_rotation.ts";

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
  // WebCrypto here, ../base/sha256_hex.ts elsewhere: the tests compare the two.
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

/** Options of {@link AuditLog}. */
export interface AuditLogOptions {
  /**
   * The total of the log and its rotated files (./audit_rotation.ts;
   * default 1 GiB, `audit_max_bytes`); 0 never rotates.
   */
  maxBytes?: number;
  /** Refusals are counted per identity and reason over windows this long (default 60 s). */
  refusalWindowMs?: number;
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
 * An append-only audit file. Lines of concurrent calls never interleave;
 * every string field is capped (./audit_caps.ts); the file rotates by size
 * (./audit_rotation.ts); refusals are counted rather than written one by
 * one (./audit_refusals.ts).
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
  /** The total of the log and its rotated files (0: no rotation). */
  readonly maxBytes: number;
  readonly #tally: RefusalTally;
  #timer?: ReturnType<typeof setTimeout>;

  constructor(path: string, options: AuditLogOptions = {}) {
    this.path = path;
    this.maxBytes = options.maxBytes ?? DEFAULT_AUDIT_MAX_BYTES;
    this.#tally = new RefusalTally(options.refusalWindowMs);
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
   * are written one after another in call order, never interleaved. Then
   * the file rotates if it is full.
   */
  append(record: AnyAuditRecord): Promise<void> {
    try {
      Deno.writeTextFileSync(this.path, _encodeLine(record), { append: true, create: true });
      rotateIfFull(this.path, this.maxBytes);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * A refused call (`denied`) of `identity` for `reason`: its line (made by
   * `record`, only when written) is written in full when it is the first of
   * its identity and reason in the current window, else counted; each
   * window's count is one `kind: "refusals"` line when it ends. So a caller
   * refused a million times writes a few lines a minute, and the refusals
   * that are only counted cost no encoding.
   */
  refusal(
    refused: { identity: string; reason: string; tool: string },
    record: () => AuditRecord | Promise<AuditRecord>,
  ): Promise<void> {
    const now = performance.now();
    const due = this.#tally.due(now);
    const tool = capText(refused.tool, AUDIT_FIELD_CAP);
    const first = this.#tally.admit(refused.identity, refused.reason, tool, now);
    for (const line of due) this.append(line).catch(() => {/* best effort: the next try */});
    this.#schedule(now);
    return first ? Promise.resolve(record()).then((r) => this.append(r)) : Promise.resolve();
  }

  /** Write the counted refusals of every window now (when the log is closed). */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const line of this.#tally.due(performance.now(), true)) {
      this.append(line).catch(() => {/* closing: nothing to tell */});
    }
  }

  #schedule(now: number): void {
    const next = this.#tally.nextDue;
    if (this.#timer !== undefined || next === undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const at = performance.now();
      for (const line of this.#tally.due(at)) this.append(line).catch(() => {});
      this.#schedule(at);
    }, Math.max(0, next - now) + 5);
    Deno.unrefTimer(this.#timer);
  }
}

/** One line, whatever the record holds: its strings capped, its size bounded. */
function _encodeLine(record: object): string {
  const capped = capFields(record as Record<string, unknown>);
  const attempts = [
    () => JSON.stringify(capped),
    () => JSON.stringify({ ...capped, args: "[unencodable]" }),
    () => JSON.stringify(boundedJson(capped, { maxDepth: 8, maxBytes: 16 * 1024 }).value),
  ];
  for (const attempt of attempts) {
    try {
      const text = attempt();
      if (typeof text === "string" && text.length <= AUDIT_LINE_CAP) {
        return text.replace(/\n/g, "\\n") + "\n";
      }
    } catch { /* the next, plainer form */ }
  }
  return `{"time":${
    JSON.stringify(new Date().toISOString())
  },"error":"unencodable audit record"}\n`;
}
