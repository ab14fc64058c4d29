/**
 * What the call runner (./_call_runner.ts) writes to the audit log: one
 * line per call (who, the tool, its grant, the arguments' digest and, as
 * the policy says, their shape or values, the outcome, the duration), per
 * question a tool asks its client, and per egress connection.
 *
 * @module
 */
import type { SandboxPolicy } from "../config/mod.ts";
import {
  argShape,
  type AuditLog,
  type AuditOutcome,
  type AuditRecord,
  type AuditWho,
  boundedJson,
  canonicalJson,
  classifyResult,
} from "../audit/mod.ts";
import { redact, scrubText, sha256Hex, useNativeSha256 } from "../base/mod.ts";
import type { EgressRecord } from "../egress/mod.ts";
import type { AskKind } from "../sandbox/mod.ts";
import {
  CredentialRevokedError,
  failure,
  type Reporter,
  type ToolResult,
  withFault,
} from "../tool/mod.ts";
import type { Catalog, CatalogEntry, ToolInfo } from "./catalog.ts";
import { type ChangeReport, changesOf, isEmptyReport, withChanges } from "../layers/mod.ts";

const _ENCODER = new TextEncoder();
/** Bytes of arguments from which node:crypto is worth its load. */
const _NATIVE_FROM = 16 * 1024;

/** The identity of calls that name none: the command line, stdio, the library. */
export const LOCAL_IDENTITY = "local";

/** What a {@link CallAudit} needs. */
export interface CallAuditOptions {
  audit: AuditLog;
  catalog: Catalog;
  reporter: Reporter;
  /** Secret values, scrubbed from what the lines hold. */
  secrets: Set<string>;
}

/**
 * Who made a call, for its audit line: `identity` (default `local`) and
 * `session` (default its principal, else `local`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { auditWho } from "./call_audit.ts";
 * assert.deepEqual(auditWho({ principal: "session:1" }), { identity: "local", session: "session:1" });
 * ```
 */
export function auditWho(
  o: { identity?: string; session?: string; principal?: string },
): AuditWho {
  return {
    identity: o.identity ?? LOCAL_IDENTITY,
    session: o.session ?? o.principal ?? LOCAL_IDENTITY,
  };
}

/**
 * A call stopped because its caller's token was revoked (its signal's
 * reason): refused (`denied`, `revoked`) whatever the sandbox said, with
 * what it changed before it was stopped still attached for its line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CredentialRevokedError } from "../tool/mod.ts";
 * import { faultOf } from "../tool/mod.ts";
 * import { revokedResult } from "./call_audit.ts";
 * const stop = new AbortController();
 * stop.abort(new CredentialRevokedError("alice"));
 * const r = revokedResult({ success: true }, "X", stop.signal);
 * assert.deepEqual(faultOf(r), { outcome: "denied", reason: "revoked" });
 * ```
 */
export function revokedResult(raw: ToolResult, name: string, signal?: AbortSignal): ToolResult {
  if (!(signal?.reason instanceof CredentialRevokedError)) return raw;
  const changed = changesOf(raw);
  const out = withFault(failure(name, signal.reason.message), "denied", "revoked");
  return changed ? withChanges(out, changed) : out;
}

/** What one call's line is made of ({@link CallAudit.call}). */
export interface CallLine {
  who: AuditWho;
  name: string;
  args: unknown;
  /** ISO time the call started. */
  time: string;
  /** `performance.now()` when it started. */
  started: number;
  result: ToolResult;
  /** How it ended (default: classified from `result`). */
  outcome?: { outcome: AuditOutcome; reason?: string };
  /**
   * The call reached its sandbox or server and ran: its line is written in
   * full, whatever its outcome, never only counted in a tally of refusals.
   */
  ran?: boolean;
  /** What its settlement did (default: the report marked on `result`). */
  changes?: ChangeReport;
}

/** The audit lines of one call runner. */
export class CallAudit {
  readonly #o: CallAuditOptions;

  constructor(options: CallAuditOptions) {
    this.#o = options;
  }

  /** One line per question a tool asked its client: answered, failed or denied (why). */
  ask(
    who: Partial<AuditWho>,
    tool: string,
    toolset: string,
    ask: AskKind,
    outcome: string,
    started: number,
    reason?: string,
  ): void {
    this.#o.audit.append({
      time: new Date().toISOString(),
      kind: "ask",
      ...auditWho(who),
      tool,
      toolset,
      ask: ask === "elicit" || ask === "roots" ? ask : "sample",
      outcome,
      ...(reason ? { reason: scrubText(reason, this.#o.secrets) } : {}),
      duration_ms: Math.round(performance.now() - started),
    }).catch((err) => this.#warn(err));
  }

  /**
   * One line per egress connection, allowed or refused. `who`: the caller
   * whose sandbox it is; none for a discovery sandbox (corral loading a
   * toolset: identity `local`, session `(discovery)`).
   */
  connection(toolset: string, r: EgressRecord, who?: Partial<AuditWho>): void {
    this.#o.audit.append({
      time: new Date().toISOString(),
      kind: "connection",
      identity: who?.identity ?? LOCAL_IDENTITY,
      session: who?.session ?? "(discovery)",
      toolset,
      host: r.host,
      port: r.port,
      address: r.address,
      verdict: r.verdict,
      ...(r.reason ? { reason: r.reason } : {}),
      bytes_out: r.bytesOut,
      bytes_in: r.bytesIn,
      ...(r.injected ? { injected: r.injected } : {}),
      ...(r.via ? { via: r.via } : {}),
    }).catch((err) => this.#warn(err));
  }

  /**
   * The line of one call, with its outcome and its own change list; a line
   * that cannot be written is a warning (the call ran).
   */
  async call(c: CallLine): Promise<void> {
    const { who, name } = c;
    const outcome = c.outcome ?? classifyResult(c.result);
    const changes = _changes(c.changes ?? changesOf(c.result));
    const { audit, catalog, reporter } = this.#o;
    const entry = catalog.anyEntry(name);
    const line = () => this.#callRecord(c, entry, outcome, changes);
    try {
      // Refusals before a call ran (the caller's limits, unknown tools, bad arguments) are
      // counted per identity and reason rather than written one by one
      // (core/audit/audit_refusals.ts). A call that ran (its writes refused at the apply, a
      // permission its code lacked), a revocation that stopped one, and a call that changed
      // files are always written, each on its own line: a tally never stands for them.
      if (
        outcome.outcome === "denied" && !c.ran && outcome.reason !== "revoked" && !changes.changes
      ) {
        const refused = { identity: who.identity, reason: outcome.reason ?? "", tool: name };
        await audit.refusal(refused, line);
      } else await audit.append(await line());
    } catch (err) {
      reporter.line(
        `Warning: ${name} ran, but its audit line could not be written to ${audit.path}: ` +
          (err as Error).message,
        "yellow",
      );
    }
  }

  /**
   * A call's record: who, the tool and its grant, its arguments (hashed;
   * shown as its policy says, secrets scrubbed), duration, outcome, changes.
   */
  async #callRecord(
    c: CallLine,
    entry: CatalogEntry | undefined,
    outcome: { outcome: AuditOutcome; reason?: string },
    changes: { changes?: ChangeReport },
  ): Promise<AuditRecord> {
    const { who, name, args, time, started, result } = c;
    const secrets = this.#o.secrets;
    const info = entry?.info;
    const canonical = _ENCODER.encode(canonicalJson(args ?? null));
    // Large arguments are hashed natively (short ones at once, in TypeScript).
    if (canonical.length > _NATIVE_FROM) await useNativeSha256();
    return {
      time,
      ...who,
      tool: name,
      toolset: info?.toolset ?? "",
      source: info?.kind ?? "",
      letters: info?.permissions ?? "",
      grant: info ? { ...info.grant } : null,
      isolation: info?.isolation ?? "",
      ...(info?.jail ? { jail: info.jail } : {}),
      ...(info?.seccomp ? { seccomp: _wall(info.seccomp) } : {}),
      args_sha256: sha256Hex(canonical),
      args_bytes: canonical.length,
      ..._shownArgs(args, entry?.source.policy, secrets),
      duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
      outcome: outcome.outcome,
      ...(outcome.reason ? { reason: outcome.reason } : {}),
      ...(result.error ? { error: scrubText(result.error, secrets) } : {}),
      ...changes,
    };
  }

  /**
   * A line for changes settled apart from any call (written by processes a
   * call left running, found when its sandbox ended): who, the toolset, what.
   */
  changes(who: Partial<AuditWho>, toolset: string, report: ChangeReport): void {
    this.#o.audit.append({
      time: new Date().toISOString(),
      kind: "changes",
      identity: who.identity ?? LOCAL_IDENTITY,
      session: who.session ?? "(discovery)",
      toolset,
      changes: report,
    }).catch((err) => this.#warn(err));
  }

  #warn(err: unknown): void {
    this.#o.reporter.line(
      `Warning: cannot write the audit log: ${(err as Error).message}`,
      "yellow",
    );
  }
}

/** What a call changed in the tree (core/layers/), when it changed anything. */
function _changes(report: ChangeReport | undefined): { changes?: ChangeReport } {
  return report && !isEmptyReport(report) ? { changes: report } : {};
}

/**
 * What a line holds of the arguments: nothing more (`redact_args`), their
 * values with secret-looking keys redacted (`audit_args: "values"`), or
 * their shape (the default). Any arguments fit a line: the digest is of all.
 */
function _shownArgs(
  args: unknown,
  policy: SandboxPolicy | undefined,
  secrets: Set<string>,
): Record<string, unknown> {
  if (policy?.redact_args) return {};
  if (policy?.audit_args === "values") {
    const shown = boundedJson(args ?? null);
    return { args: redact(shown.value, secrets), ...(shown.cut ? { args_truncated: true } : {}) };
  }
  const { shape, truncated } = argShape(args ?? null);
  return { args_shape: shape, ...(truncated ? { args_truncated: true } : {}) };
}

/** The second wall of a call's sandbox, with the refused syscalls its policy grants. */
function _wall(w: NonNullable<ToolInfo["seccomp"]>): string {
  return w.filter === "on" && w.except.length ? `on, except ${w.except.join(", ")}` : w.filter;
}
