/**
 * Running one call: the tool the catalog names, after confirmation, in the
 * sandbox of its toolset and grant, within its time limit; its reports and
 * logs scrubbed of secrets; its result cleaned (secrets, host paths) and
 * written to the audit log.
 *
 * @module
 */
import type { Policy } from "../config/mod.ts";
import { type AuditLog, type AuditWho, classifyResult } from "../audit/mod.ts";
import { scrubText, sink as telemetry } from "../base/mod.ts";
import type { EgressRecord } from "../egress/mod.ts";
import {
  AskBudget,
  type AskKind,
  Sandbox,
  type SandboxEnv,
  type SandboxOptions,
} from "../sandbox/mod.ts";
import {
  type HeldSandbox,
  LOCAL_PRINCIPAL,
  sandboxKey,
  sandboxModules,
  SandboxPool,
  type SandboxPoolLimits,
} from "./sandbox_pool.ts";
import {
  argLimitRefusal,
  failure,
  type Grant,
  type Reporter,
  type ReportKind,
  type ReportOptions,
  type ToolResult,
  withFault,
} from "../tool/mod.ts";
import type { Catalog, CatalogEntry, ToolInfo, ToolsetSource } from "./catalog.ts";
import type { HostedCallContext } from "../hosted/mod.ts";
import { hostVars } from "./host_vars.ts";
import { holdRequest } from "./_call_hold.ts";
import { auditWho, CallAudit, revokedResult } from "./call_audit.ts";
import { cleanResult } from "./_clean_result.ts";
import { type ChangeReport, changesOf, type HoldRequest, withChanges } from "../layers/mod.ts";

/** Per-call options of {@link CallRunner.call} (and `Registry.call`). */
export interface RegistryCallOptions {
  signal?: AbortSignal;
  /** Shorter timeout than the policy's (never longer). */
  timeoutMs?: number;
  onReport?: (kind: ReportKind, message: string, options?: ReportOptions) => void;
  onLog?: (text: string) => void;
  /** Asked when a tool needs confirmation and the policy says `ask`. */
  confirm?: (tool: ToolInfo, args: unknown) => Promise<boolean> | boolean;
  /**
   * Answers the tool's questions to the client (`sample`, `elicit`), with
   * the client that made this call; absent: the tool gets a clear error.
   */
  onAsk?: (kind: AskKind, params: unknown, signal?: AbortSignal) => Promise<unknown>;
  /**
   * Whom the call is for (an MCP session, a stateless caller's token, an
   * identity): an opaque key. Calls of different principals never share a
   * sandbox process. Default: one principal for the command line and the library.
   */
  principal?: string;
  /** Who is calling, for the audit log (an HTTP identity; default `local`). */
  identity?: string;
  /** The caller's session, for the audit log (default: the principal, else `local`). */
  session?: string;
  /** The request's W3C trace context (MCP `_meta.traceparent`): the call's span continues it. */
  traceparent?: string;
  /** Hold the call's changes for review instead of applying them (`--hold`). */
  hold?: boolean;
}

/** What a {@link CallRunner} needs. */
export interface CallRunnerOptions {
  /** The workspace (sandboxes' current directory; host paths are hidden outside it). */
  workspace: string;
  /** The policy: confirmation rules. */
  policy: Policy;
  /** Which tools exist, with their grants. */
  catalog: Catalog;
  /** Where reports and logs go when the caller gives no hooks. */
  reporter: Reporter;
  /** Secret values scrubbed from everything a call gives back (shared, grows). */
  secrets: Set<string>;
  /** The audit log, if any. */
  audit?: AuditLog;
  /** Run calls even when the audit log cannot be written (an explicit opt-out). */
  auditOptional?: boolean;
  /** The namespace of a source's sandboxes, when they get one. */
  namespace?: (source: ToolsetSource, grant: Grant) => SandboxOptions["namespace"];
  /** Runs a call of a hosted server's tool (core/hosted/): sources of kind `server`. */
  hosted?: (name: string, args: unknown, call: HostedCallContext) => Promise<ToolResult>;
  /** How many call sandboxes may live at once, and how long an unused one is kept. */
  sandboxLimits?: SandboxPoolLimits;
  /** Hold every call's changes for review (`--hold`: ./_call_hold.ts). */
  hold?: boolean;
}

/**
 * Runs calls in sandboxes, one sandbox per principal, toolset and grant,
 * started on the principal's first call and reused by its next ones
 * (./sandbox_pool.ts: bounded, reaped when idle, closed with the principal).
 *
 * @example
 * ```ts ignore
 * const runner = new CallRunner({ workspace, policy, catalog, reporter, secrets: new Set() });
 * const result = await runner.call("WordCount", { filepath: "README.md" });
 * await runner.close();
 * ```
 */
export class CallRunner {
  readonly #options: CallRunnerOptions;
  readonly #pool: SandboxPool;
  readonly #audit: CallAudit | undefined;
  #envs = new WeakMap<Sandbox, SandboxEnv>();
  /** Calls running now: {@link close} waits for their lines. */
  readonly #running = new Set<Promise<unknown>>();

  constructor(options: CallRunnerOptions) {
    this.#options = options;
    this.#pool = new SandboxPool(options.sandboxLimits);
    const { audit, catalog, reporter, secrets } = options;
    this.#audit = audit && new CallAudit({ audit, catalog, reporter, secrets });
  }

  /** The live call sandboxes of every principal (./sandbox_pool.ts). */
  get pool(): SandboxPool {
    return this.#pool;
  }

  /** A principal ended (its session closed): its sandboxes close, with all they started. */
  closePrincipal(principal: string): Promise<void> {
    return this.#pool.closePrincipal(principal);
  }

  /**
   * Call a tool in its sandbox. Unknown names throw a `TypeError`; every
   * other outcome is a {@link ToolResult}.
   */
  call(name: string, args: unknown, options: RegistryCallOptions = {}): Promise<ToolResult> {
    const call = this.#audited(name, args, options);
    const done = call.catch(() => {});
    this.#running.add(done);
    done.finally(() => this.#running.delete(done));
    return call;
  }

  async #audited(name: string, args: unknown, options: RegistryCallOptions): Promise<ToolResult> {
    const ran = { ran: false };
    if (!this.#options.audit) return this.#clean(await this.#call(name, args, options, ran), name);
    // An audit log is a control: a call that could not be recorded does not run.
    try {
      await this.#options.audit.check();
    } catch (err) {
      if (!this.#options.auditOptional) {
        return failure(
          name,
          `refused: the audit log ${this.#options.audit.path} cannot be written ` +
            `(${(err as Error).message}); fix it, or set "audit_required": false in corral.json`,
        );
      }
    }
    const started = performance.now();
    const time = new Date().toISOString();
    const who = auditWho(options);
    let raw: ToolResult;
    try {
      raw = await this.#call(name, args, options, ran);
    } catch (err) {
      // An unknown tool is a refused request; anything else thrown is corral's error.
      const thrown = failure(name, (err as Error).message);
      const [outcome, reason] = err instanceof TypeError
        ? ["denied", "unknown_tool"] as const
        : ["error", "internal"] as const;
      const line = { who, name, args, time, started, ran: ran.ran };
      await this.#audit!.call({ ...line, result: thrown, outcome: { outcome, reason } });
      throw err;
    }
    raw = revokedResult(raw, name, options.signal); // its caller's token revoked: refused
    // Read before cleaning: the marks of core/tool/result.ts and core/layers/ are on this
    // object only (a cleaned copy is a new object)...
    const outcome = classifyResult(raw);
    const changes = changesOf(raw);
    let result = this.#clean(raw, name);
    // ...and put on the cleaned copy the caller gets (telemetry reads it: core/telemetry/).
    if (outcome.outcome === "error" || outcome.outcome === "denied") {
      result = withFault(result, outcome.outcome, outcome.reason ?? outcome.outcome);
    }
    if (changes) withChanges(result, changes);
    await this.#audit!.call({ who, name, args, time, started, result, outcome, ...ran, changes });
    return result;
  }

  /**
   * Audit a call refused before it reached the runner (a caller's limits,
   * a busy server, a tool the caller may not use): one `denied` line with
   * `reason`. Nothing without an audit log.
   */
  async auditRefusal(
    name: string,
    args: unknown,
    options: RegistryCallOptions,
    reason: string,
    message: string,
  ): Promise<void> {
    await this.#audit?.call({
      who: auditWho(options),
      name,
      args,
      time: new Date().toISOString(),
      started: performance.now(),
      result: failure(name, message),
      outcome: { outcome: "denied", reason },
    });
  }

  /**
   * The sandbox a principal's calls of a tool run in (shared by tools of a
   * toolset with equal letters), started when there is none.
   */
  async sandboxFor(name: string, principal = LOCAL_PRINCIPAL): Promise<Sandbox> {
    const entry = this.#options.catalog.entry(name);
    if (!entry) throw new TypeError(this.#options.catalog.unknownToolMessage(name));
    const held = await this.#sandbox(entry.source, entry.info, principal);
    if (typeof held === "string") throw new Error(held);
    held.release();
    return held.sandbox;
  }

  /** Stop the sandboxes of one toolset, every principal's (e.g. a deleted plugin file). */
  async closeToolset(id: string): Promise<void> {
    await this.#pool.closeKeys((key) => key.startsWith(`${id}|`));
  }

  /**
   * Stop every sandbox; the calls they cut end with their own lines (waited
   * for, 10 s at most), then the refusals counted so far are written.
   */
  async close(): Promise<void> {
    await this.#pool.close();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const cap = new Promise<void>((r) => timer = setTimeout(r, _CLOSE_WAIT_MS));
    await Promise.race([Promise.all(this.#running), cap]).finally(() => clearTimeout(timer));
    this.#options.audit?.flush();
  }

  #clean(result: ToolResult, name: string): ToolResult {
    return cleanResult(result, name, this.#options);
  }

  /** One line per egress connection, allowed or refused (also for discovery sandboxes). */
  auditConnection(toolset: string, r: EgressRecord, who?: AuditWho): void {
    telemetry.egress(r.verdict); // corral_egress_connections_total, audit log or not
    this.#audit?.connection(toolset, r, who);
  }

  /** Changes to the tree settled apart from any call (discovery, a sandbox's end). */
  auditChanges(toolset: string, report: ChangeReport, who?: AuditWho): void {
    this.#audit?.changes(who ?? {}, toolset, report);
  }

  /** One call: its tool found, its arguments and confirmation checked, then run where it lives. */
  async #call(
    name: string,
    args: unknown,
    options: RegistryCallOptions,
    ran: { ran: boolean },
  ): Promise<ToolResult> {
    const entry = this.#options.catalog.entry(name);
    if (!entry) return this.#notLoaded(name);
    const { info, source } = entry;
    // Before anything of the call happens (confirmation, a sandbox start): bounded arguments.
    const tooBig = argLimitRefusal(args, source.policy);
    if (tooBig) return withFault(failure(name, tooBig), "denied", "arguments");
    const refused = await this.#confirm(entry, args, options);
    if (refused) return refused;
    const limit = source.policy.timeout_ms;
    const timeoutMs = options.timeoutMs ? Math.min(options.timeoutMs, limit) : limit;
    // The call's questions to its client: capped, audited, valid only while the call runs.
    const who = auditWho(options);
    using asks = new AskBudget(
      source.policy,
      options.onAsk,
      (kind, outcome, started, reason) =>
        this.#audit?.ask(who, name, info.toolset, kind, outcome, started, reason),
    );
    const asked = options.hold || this.#options.hold;
    const run: _Run = {
      name,
      args,
      entry,
      options,
      ran,
      who,
      timeoutMs,
      onAsk: (kind, params) => asks.ask(kind, params),
      hold: holdRequest(name, info.toolset, source.policy, this.#options.policy, asked, who),
    };
    const hosted = this.#options.hosted;
    if (source.kind === "server" && hosted) return await this.#hostedCall(hosted, run);
    return await this.#sandboxCall(run);
  }

  /** A name the catalog lists but did not load: why; a name it does not know: a `TypeError`. */
  #notLoaded(name: string): ToolResult {
    const { catalog } = this.#options;
    const other = catalog.anyEntry(name);
    if (other) return failure(name, `not loaded: ${other.info.reason ?? other.info.status}`);
    throw new TypeError(catalog.unknownToolMessage(name));
  }

  /** A hosted server's tool (core/hosted/): the call goes to its server. */
  async #hostedCall(
    hosted: NonNullable<CallRunnerOptions["hosted"]>,
    run: _Run,
  ): Promise<ToolResult> {
    const { name, entry: { info, source }, options, ran } = run;
    const secrets = this.#options.secrets;
    return await hosted(name, run.args, {
      policy: source.policy,
      grant: info.grant,
      timeoutMs: run.timeoutMs,
      // Principals never share a hosted server either (core/hosted/hosted_servers.ts).
      session: options.principal,
      onRun: () => ran.ran = true,
      ...(run.hold ? { hold: run.hold } : {}),
      identity: run.who.identity,
      signal: options.signal,
      onProgress: (progress, total, message) =>
        options.onReport?.("progress", scrubText(message ?? "", secrets), {
          progress,
          ...(total !== undefined ? { total } : {}),
        }),
      onLog: this.#onLog(name, options),
      onAsk: run.onAsk,
    });
  }

  /** A tool of a toolset: the call runs in the principal's sandbox of its toolset and grant. */
  async #sandboxCall(run: _Run): Promise<ToolResult> {
    const { name, entry: { info, source, module }, options } = run;
    const { reporter, secrets } = this.#options;
    const principal = options.principal ?? LOCAL_PRINCIPAL;
    const held = await this.#sandbox(source, info, principal, run.who);
    if (typeof held === "string") return withFault(failure(name, held), "denied", "limits");
    const { sandbox } = held;
    const env = this.#env(sandbox, source, info);
    run.ran.ran = true;
    const result = await sandbox.call(module, name, run.args, env, {
      timeoutMs: run.timeoutMs,
      signal: options.signal,
      onAsk: run.onAsk,
      ...(run.hold ? { hold: run.hold } : {}),
      onReport: (kind, message, opts) => {
        message = scrubText(message, secrets);
        if (options.onReport) options.onReport(kind, message, opts);
        else reporter.report(name, info.permissions, { kind, message, options: opts });
      },
      onLog: this.#onLog(name, options),
    }).finally(held.release);
    reporter.finish();
    return result;
  }

  /** Where a call's log lines go, scrubbed of secrets: the caller's hook, else the reporter. */
  #onLog(name: string, options: RegistryCallOptions): (text: string) => void {
    const { reporter, secrets } = this.#options;
    return (text) => {
      text = scrubText(text, secrets);
      if (options.onLog) options.onLog(text);
      else reporter.line(`[${name}] ${text}`, "dim");
    };
  }

  /** One environment per sandbox: its tools share the grant, the config and the variables. */
  #env(sandbox: Sandbox, source: ToolsetSource, info: ToolInfo): SandboxEnv {
    let env = this.#envs.get(sandbox);
    if (!env) {
      env = {
        workspace: this.#options.workspace,
        grant: info.grant,
        config: source.config,
        vars: hostVars(source.policy),
      };
      this.#envs.set(sandbox, env);
    }
    return env;
  }

  /** A refusal when the tool needs confirmation and does not get it, else undefined. */
  async #confirm(
    { info }: CatalogEntry,
    args: unknown,
    options: RegistryCallOptions,
  ): Promise<ToolResult | undefined> {
    const when = info.confirmWhen;
    const destroys = when !== undefined && typeof args === "object" && args !== null &&
      (args as Record<string, unknown>)[when] === true;
    if (!info.confirm && !destroys) return undefined;
    const name = info.name;
    const policy = this.#options.policy;
    const rule = policy.confirm(name);
    if (rule === "never") {
      const why = `refused by policy (tools.${name}.confirm is "never" in ${
        policy.origin(`tools.${name}.confirm`)
      })`;
      return withFault(failure(name, why), "denied", "policy");
    }
    if (rule === "ask") {
      const yes = options.confirm ? await options.confirm(info, args) : false;
      if (!yes) {
        const why = options.confirm
          ? "not confirmed"
          : `needs confirmation: approve it (corral call --yes) or set tools.${name}.confirm ` +
            `to "always" in ${policy.editFile}`;
        return withFault(failure(name, why), "denied", "confirmation");
      }
    }
    return undefined;
  }

  /** The principal's sandbox of this toolset and grant, held for one call (or why none). */
  async #sandbox(
    source: ToolsetSource,
    info: ToolInfo,
    principal: string,
    who?: AuditWho,
  ): Promise<HeldSandbox | string> {
    const held = this.#pool.acquire(
      principal,
      sandboxKey(source, info),
      () => this.#newSandbox(source, info, who),
    );
    if (typeof held === "string") return held;
    try {
      await held.sandbox.prepare();
    } catch (err) {
      held.release();
      throw err;
    }
    return held;
  }

  /** A sandbox of one principal: its connections and late questions are audited as its caller's. */
  #newSandbox(source: ToolsetSource, info: ToolInfo, who?: AuditWho): Sandbox {
    const { reporter, secrets } = this.#options;
    return new Sandbox({
      label: `${source.id}[${info.permissions || "-"}]`,
      grant: info.grant,
      modules: sandboxModules(this.#options.catalog, source, info),
      policy: source.policy,
      imports: source.imports,
      workspace: this.#options.workspace,
      onLog: (text) => reporter.line(`[${source.id}] ${scrubText(text, secrets)}`, "dim"),
      namespace: this.#options.namespace?.(source, info.grant),
      pins: source.pins,
      onConnection: (r) => this.auditConnection(source.id, r, who),
      onChanges: (report) => this.auditChanges(source.id, report, who),
      onAskRefused: (kind, why) =>
        this.#audit?.ask(
          who ?? {},
          "(no running call)",
          source.id,
          kind,
          "denied",
          performance.now(),
          why,
        ),
    });
  }
}

/** How long {@link CallRunner.close} waits for the calls its sandboxes' end cut. */
const _CLOSE_WAIT_MS = 10_000;

/** A call under way, past its checks: what {@link CallRunner}'s two ways of running it need. */
interface _Run {
  name: string;
  args: unknown;
  entry: CatalogEntry;
  options: RegistryCallOptions;
  /** Set once the tool starts (for the audit line). */
  ran: { ran: boolean };
  who: AuditWho;
  /** The policy's limit, or the caller's when shorter. */
  timeoutMs: number;
  /** The tool's questions to its client, through the call's budget. */
  onAsk: (kind: AskKind, params: unknown) => Promise<unknown>;
  /** Its changes held for review, when asked or set (./_call_hold.ts). */
  hold: HoldRequest | undefined;
}
