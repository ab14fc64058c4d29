/**
 * The hosted servers of one registry: their tools for the catalog (from
 * the approved records, without starting anything), their calls, and the
 * approval rule at every start and `tools/list_changed`: a tool whose
 * definition differs from the approved one is not offered, and the call
 * is refused, until the operator approves it again.
 *
 * @module
 */
import type { SandboxPolicy, ServerEntry } from "../config/mod.ts";
import type { EgressRecord } from "../egress/mod.ts";
import {
  effectiveGrant,
  type HostPrivileges,
  type ModuleMeta,
  settleAfter,
} from "../sandbox/mod.ts";
import { scrubText } from "../base/mod.ts";
import type { AuditLog } from "../audit/mod.ts";
import {
  failure,
  type Grant,
  type Reporter,
  terminalSafe,
  type ToolResult,
  withFault,
} from "../tool/mod.ts";
import {
  approvalsDir,
  changedFields,
  readApproved,
  readApprovedNow,
  readFailure,
  readSeen,
  type ToolDefinition,
  writeApproved,
  writeFailure,
  writeSeen,
} from "./approvals.ts";
import { type ChangeReport, isEmptyReport } from "../layers/mod.ts";
import { runHostedCall } from "./_hosted_call.ts";
import type { HostedCall, HostedServer } from "./hosted_server.ts";
import { hostedRuntime } from "./hosted_runtime.ts";
import { hostedTools } from "./_hosted_tools.ts";
import { type HostedCaller, HostedListings } from "./hosted_listings.ts";
import type { Client } from "@modelcontextprotocol/client";

/** What {@link HostedServers} needs from the registry. */
export interface HostedServersOptions {
  workspace: string;
  /** What the host grants (a server's grant for resources and prompts). */
  host: HostPrivileges;
  /** The namespace of a server's sandbox (undefined: none can be had). */
  namespace(entry: ServerEntry, policy: SandboxPolicy, grant: Grant):
    | { bwrap: string; protect: string[]; hide: string[] }
    | undefined;
  /** Secret values scrubbed from results and logs (shared; a server's are added at start). */
  secrets: Set<string>;
  /** The audit log: one line per refusal or lifecycle event of a server. */
  audit?: AuditLog;
  /** Where a server's log lines go (outside a call). */
  reporter: Reporter;
  onConnection(server: string, r: EgressRecord): void;
  /** The tools of a server changed (approval state): register it again. */
  onChanged(server: string): void;
  /** Where installs live (tests). */
  serversDir?: string;
  /** The approval records' folder, fixed for the registry's life (default: {@link approvalsDir} at creation). */
  approvalsDir?: string;
}

/** What a call of a hosted tool gets from the call runner. */
export type HostedCallContext = {
  policy: SandboxPolicy;
  grant: Grant;
  /** The principal (MCP session, identity) making the call: principals never share a server. */
  session?: string;
  /** Who is calling (an HTTP identity; `local` on the command line), for the audit log. */
  identity?: string;
  /** Told when the call is sent to its server (it runs: its audit line is written in full). */
  onRun?: () => void;
} & HostedCall;

/** A session's servers idle this long are stopped (like an idle MCP session). */
export const SESSION_IDLE_MS = 15 * 60_000;
const _APPROVING = "\0approve";

/** The letters a server holds: those its `permissions.json` entry grants a list for. */
export function serverLetters(p: SandboxPolicy): string {
  return (p.read.length ? "r" : "") + (p.write.length ? "w" : "") + (p.run.length ? "x" : "") +
    (p.net.length ? "n" : "");
}

/** The hosted servers of one registry. */
export class HostedServers {
  readonly entries: ServerEntry[];
  readonly #options: HostedServersOptions;
  /** The records' folder, fixed at creation: a later change of the environment never moves it. */
  readonly #dir: string;
  /** `<server>\0<session>` → its instance. */
  #servers = new Map<string, HostedServer>();
  #used = new Map<string, number>();
  /** corral's tool name → [server, the server's name for it]. */
  #names = new Map<string, [string, string]>();
  /** The policy of each registered server that may start (undefined: it may not). */
  #policies = new Map<string, SandboxPolicy | undefined>();
  /** Resource URI and offered prompt name → server. */
  readonly #listings = new HostedListings({
    clients: (what, session, only) => this.#clients(what, session, only),
    starts: (session, only) => this.#starts(session, only),
    secrets: () => this.#options.secrets,
    event: (server, kind, detail, who) => this.#event(server, kind, detail, who),
  });
  /** live definition → approved definition → the fields that differ (./approvals.ts). */
  #compared = new WeakMap<ToolDefinition, WeakMap<ToolDefinition, string[]>>();

  constructor(entries: ServerEntry[], options: HostedServersOptions) {
    this.entries = entries;
    this.#options = options;
    this.#dir = options.approvalsDir ?? approvalsDir();
  }

  /** The entry of a server. */
  entry(name: string): ServerEntry | undefined {
    return this.entries.find((e) => e.name === name);
  }

  /** The server behind a corral tool name. */
  serverOf(tool: string): string | undefined {
    return this.#names.get(tool)?.[0];
  }

  /**
   * What the catalog registers for `entry`, from the records alone: the
   * approved tools, those whose definition changed marked not offered, or
   * why there are none (never listed; failed).
   */
  metas(
    entry: ServerEntry,
    policy: SandboxPolicy,
    taken: (n: string) => boolean,
    missing?: string,
  ): ModuleMeta[] {
    const module = `server:${entry.name}`;
    this.#policies.set(entry.name, missing ? undefined : policy);
    let approved: ToolDefinition[] | undefined, seen: ToolDefinition[] | undefined;
    try {
      approved = readApproved(entry.name, this.#dir);
      seen = readSeen(entry.name, this.#dir);
    } catch (err) {
      return [{ module, tools: [], problems: [], error: (err as Error).message }];
    }
    const failed = readFailure(entry.name, this.#dir);
    const problems = failed ? [`server "${entry.name}" failed: ${failed}`] : [];
    if (!approved) {
      return [{
        module,
        tools: [],
        problems,
        error: `server "${entry.name}" has no approved tools yet: run corral servers install ` +
          `${entry.name} (installs it, starts it once and records its tools for approval)`,
      }];
    }
    const tools = hostedTools(entry, serverLetters(policy), approved, seen, taken);
    for (const [k, v] of this.#names) if (v[0] === entry.name) this.#names.delete(k);
    for (const t of tools) this.#names.set(t.name, [entry.name, t.serverName]);
    if (missing) {
      for (const t of tools) t.meta.load = { load: false, reason: missing };
    }
    return [{ module, tools: tools.map((t) => t.meta), problems }];
  }

  /** Run one call of a hosted tool; every outcome is a result. */
  async call(
    tool: string,
    args: unknown,
    ctx: HostedCallContext,
  ): Promise<ToolResult> {
    const [name, serverTool] = this.#names.get(tool) ?? [];
    const entry = name ? this.entry(name) : undefined;
    if (!entry || !serverTool) return _error(failure(tool, "no hosted server offers it"), "gone");
    this.#sweep();
    const server = await this.#server(entry, ctx.policy, ctx.grant, ctx.session, ctx.identity);
    try {
      await server.ensure();
    } catch (err) {
      return _error(failure(tool, (err as Error).message), "start");
    }
    for (const s of server.secrets) this.#options.secrets.add(s);
    // What runs is what was approved: the running server's definition now.
    const live = server.tools.find((t) => t.name === serverTool);
    const approved = readApprovedNow(entry.name, this.#dir)?.find((t) => t.name === serverTool);
    const changed = live ? this.#changed(live, approved) : ["gone"];
    if (changed.length) {
      const refused = failure(
        tool,
        changed[0] === "gone"
          ? `server "${entry.name}" no longer lists it`
          : `its definition changed since it was approved (${changed.join(", ")}): review it ` +
            `and run corral servers approve ${entry.name}`,
      );
      return withFault(refused, "denied", "not_approved");
    }
    // What the call wrote is judged and applied now (core/layers/), for this call alone; a
    // server that ended under it (killed, crashed, its session's end) settled as it ended.
    return await server.holding(ctx, async (settles) => {
      ctx.onRun?.();
      const result = await runHostedCall(server, entry.name, tool, serverTool, args, ctx);
      return await settleAfter(settles(), result, tool);
    });
  }

  /**
   * Start `name`, record what it lists as approved, and stop it (`corral
   * servers install` and `approve`). Returns the tool names.
   */
  async approve(name: string, policy: SandboxPolicy, grant: Grant): Promise<string[]> {
    const entry = this.entry(name);
    if (!entry) throw new Error(`no server "${name}" in corral.json`);
    const server = await this.#server(entry, policy, grant, _APPROVING);
    try {
      await server.ensure();
      writeApproved(name, server.tools, this.#dir);
      return server.tools.map((t) => t.name);
    } finally {
      this.#servers.delete(`${name}\0${_APPROVING}`);
      await server.stop();
    }
  }

  /** Each server started here; `view`: what its view could not refresh (../layers/view_refresh.ts). */
  states(): { server: string; state: string; reason?: string; starts: number; view?: string }[] {
    return [...this.#servers].map(([key, s]) => ({
      server: key.split("\0")[0],
      state: s.state,
      ...(s.reason ? { reason: s.reason } : {}),
      starts: s.starts,
      ...(s.layers?.view.note ? { view: s.layers.view.note } : {}),
    }));
  }

  // Resources, templates and prompts of the servers that may start (started for `session`),
  // those `caller.only` reaches: ./hosted_listings.ts.
  /** Resources (or templates) of the servers, marked with their server. */
  listResources = (templates = false, session = "", caller?: HostedCaller) =>
    this.#listings.listResources(templates, session, caller);
  /** Read a resource from the server that listed it (or the only one with resources). */
  readResource = (uri: string, session = "", caller?: HostedCaller) =>
    this.#listings.readResource(uri, session, caller);
  /** The prompts of the servers, named `<server>_<name>` when names collide. */
  listPrompts = (session = "", caller?: HostedCaller) =>
    this.#listings.listPrompts(session, caller);
  /** Get a prompt by the name {@link listPrompts} gave it (to the same caller). */
  getPrompt = (offered: string, args?: Record<string, string>, session = "", c?: HostedCaller) =>
    this.#listings.getPrompt(offered, args, session, c);
  /** Complete a prompt's or a resource template's argument, at the server offering it. */
  complete = (params: Record<string, unknown>, session = "", c?: HostedCaller) =>
    this.#listings.complete(params, session, c);
  /** Subscribe to (`on`) or unsubscribe from a resource, at the server that listed it. */
  subscribe = (uri: string, on: boolean, session = "", c?: HostedCaller) =>
    this.#listings.subscribe(uri, on, session, c);

  /** The running clients of the servers that may start, offer `what` and pass `only`. */
  /** The servers that may start and pass `only`, for `session`, and how to start each. */
  async #starts(
    session: string,
    only?: (server: string) => boolean,
  ): Promise<Array<[string, () => Promise<Client>]>> {
    const out: Array<[string, () => Promise<Client>]> = [];
    for (const entry of this.entries) {
      if (only && !only(entry.name)) continue;
      const policy = this.#policies.get(entry.name);
      if (!policy || !readApproved(entry.name, this.#dir)) continue;
      const grant = effectiveGrant(serverLetters(policy), policy, this.#options.host);
      if (grant.missing) continue;
      const server = await this.#server(entry, policy, grant.grant, session);
      out.push([entry.name, async () => {
        const client = await server.ensure();
        for (const s of server.secrets) this.#options.secrets.add(s);
        return client;
      }]);
    }
    return out;
  }

  /** The running clients of the servers that may start, pass `only` and offer `what`. */
  async #clients(
    what: "resources" | "prompts",
    session: string,
    only?: (server: string) => boolean,
  ): Promise<Array<[string, Client]>> {
    const out: Array<[string, Client]> = [];
    for (const [name, start] of await this.#starts(session, only)) {
      try {
        const client = await start();
        if (client.getServerCapabilities()?.[what]) out.push([name, client]);
      } catch { /* failed: shown by corral list; the others still answer */ }
    }
    return out;
  }

  /**
   * A session (principal) ended: its servers stop, with all they started;
   * resolves once they have exited and released their sandboxes.
   */
  async closeSession(session: string): Promise<void> {
    const stopping: Promise<void>[] = [];
    for (const [key, s] of this.#servers) {
      if (!key.endsWith(`\0${session}`)) continue;
      stopping.push(s.stop());
      this.#servers.delete(key);
    }
    await Promise.all(stopping);
  }

  /**
   * Stop every server; resolves once each has exited and released its
   * sandbox (its placeholders in the workspace are gone by then).
   */
  async close(): Promise<void> {
    const stopping = [...this.#servers.values()].map((s) => s.stop());
    this.#servers.clear();
    await Promise.all(stopping);
  }

  /**
   * The server instance of `entry` for `session`: two sessions (principals)
   * never share one; `corral servers approve` has one of its own.
   */
  async #server(
    entry: ServerEntry,
    policy: SandboxPolicy,
    grant: Grant,
    session = "",
    identity?: string,
  ): Promise<HostedServer> {
    const key = `${entry.name}\0${session}`;
    const approving = session === _APPROVING;
    this.#used.set(key, performance.now());
    let s = this.#servers.get(key);
    if (s) return s;
    const { HostedServer } = await hostedRuntime();
    s = this.#servers.get(key); // another call may have made it meanwhile
    if (s) return s;
    const o = this.#options;
    s = new HostedServer({
      entry,
      grant,
      policy,
      workspace: o.workspace,
      namespace: o.namespace(entry, policy, grant),
      onConnection: (r) => o.onConnection(entry.name, r),
      onChanges: (report) => this.#changes(entry.name, report, { session, identity }),
      ...(o.serversDir ? { serversDir: o.serversDir } : {}),
    }, {
      onTools: (tools) => {
        writeFailure(entry.name, undefined, this.#dir);
        if (!approving) this.#listed(entry.name, tools);
      },
      onEvent: (kind, detail) => {
        this.#event(entry.name, kind, detail, { session, identity });
        if (kind === "failed") writeFailure(entry.name, scrubText(detail, o.secrets), this.#dir);
        if (kind === "failed" || kind === "crashed") o.onChanged(entry.name);
      },
      onLog: (text) =>
        o.reporter.line(`[${entry.name}] ${terminalSafe(scrubText(text, o.secrets))}`, "dim"),
    });
    this.#servers.set(key, s);
    return s;
  }

  /**
   * {@link changedFields} of a live definition against an approved one,
   * compared once per pair: both are kept unchanged (a new list or a changed
   * record brings new objects), so the answer for the same two holds.
   */
  #changed(live: ToolDefinition, approved: ToolDefinition | undefined): string[] {
    if (!approved) return changedFields(live, approved);
    let byApproved = this.#compared.get(live);
    if (!byApproved) this.#compared.set(live, byApproved = new WeakMap());
    let fields = byApproved.get(approved);
    if (!fields) byApproved.set(approved, fields = changedFields(live, approved));
    return fields;
  }

  /** Stop the servers of sessions idle for {@link SESSION_IDLE_MS}: they die with their session. */
  #sweep(): void {
    const now = performance.now();
    for (const [key, s] of this.#servers) {
      if (key.endsWith("\0") || now - (this.#used.get(key) ?? now) < SESSION_IDLE_MS) continue;
      void s.stop();
      this.#servers.delete(key);
      this.#used.delete(key);
    }
  }

  /** One audit line: `{"kind": "server", identity, session, server, event, detail}`. */
  #event(
    server: string,
    event: string,
    detail: string,
    who: { session?: string; identity?: string } = {},
  ): void {
    const record = {
      time: new Date().toISOString(),
      kind: "server",
      // The session (principal) whose instance it is, and who started it.
      identity: who.identity ?? "local",
      session: !who.session ? "local" : who.session === _APPROVING ? "(approve)" : who.session,
      server,
      event,
      detail: scrubText(detail, this.#options.secrets),
    };
    this.#options.audit?.append(record as never).catch(() => {});
  }

  /** What a server wrote outside any call, settled when it stopped: a line of its own. */
  #changes(
    server: string,
    report: ChangeReport,
    who: { session?: string; identity?: string },
  ): void {
    if (isEmptyReport(report)) return;
    this.#options.audit?.append({
      time: new Date().toISOString(),
      kind: "changes",
      identity: who.identity ?? "local",
      session: !who.session ? "local" : who.session === _APPROVING ? "(approve)" : who.session,
      toolset: server,
      changes: report,
    } as never).catch(() => {});
  }

  /** A start or `tools/list_changed` listed `tools`: the first list is approved, a change is not. */
  #listed(server: string, tools: ToolDefinition[]): void {
    const approved = readApproved(server, this.#dir);
    if (!approved) {
      writeApproved(server, tools, this.#dir);
    } else {
      const byName = new Map(approved.map((t) => [t.name, t]));
      const same = tools.length === approved.length &&
        tools.every((t) => changedFields(t, byName.get(t.name)).length === 0);
      if (same) writeApproved(server, approved, this.#dir);
      else {
        writeSeen(server, tools, this.#dir);
        this.#event(server, "changed", "its tools differ from the approved ones");
      }
    }
    this.#options.onChanged(server);
  }
}

/** A hosted call that failed by corral or its server, not by the tool's answer. */
function _error(result: ToolResult, reason: string): ToolResult {
  return withFault(result, "error", reason);
}
