/**
 * Host side of a sandbox: a permissioned Web Worker (isolation "worker") or
 * a child `deno run` whose flags are the grant (isolation "process").
 * Calls are multiplexed by id, timed out, cancelled, capped, and a sandbox
 * that stops answering is recycled; the next call gets a fresh one.
 *
 * @module
 */
import { pinsRefusal, prepareSandboxFiles } from "./sandbox_files.ts";
import {
  insideLoad,
  insidePath,
  outsideMetas,
  outsideText,
  type PinnedCode,
  pinnedGone,
} from "./pinned_code.ts";
import { capResult, failure, type ToolResult, ToolTimeoutError, withFault } from "../tool/mod.ts";
import { startProcess } from "./process_transport.ts";
import { answerAsk, refuseAsk } from "./_ask.ts";
import { acceptMetas } from "./_module_meta.ts";
import type { HostMessage, ModuleMeta, SandboxEnv, SandboxMessage } from "./protocol.ts";
import type { CallOptions, LoadRequest, SandboxOptions } from "./sandbox_options.ts";
import type { SandboxNamespace, Transport, TransportHooks, TransportSpec } from "./_transport.ts";
import { startWorker } from "./_worker_transport.ts";
import { resultOf, settleAfter } from "./settled_result.ts";
import { LastChanges } from "./last_changes.ts";
import { insideEnv } from "./_sandbox_env.ts";
import { type Deadline, DeadlineTimer } from "./_deadline_timer.ts";

type _Load = Extract<HostMessage, { type: "load" }>;

interface _Pending extends Deadline {
  tool: string;
  resolve: (msg: SandboxMessage) => void;
  onReport?: CallOptions["onReport"];
  onLog?: CallOptions["onLog"];
  onAsk?: CallOptions["onAsk"];
}

const _PING_GRACE_MS = 1000;

export { sandboxEntryFiles } from "./sandbox_files.ts";
export type { CallOptions, LoadRequest, SandboxOptions } from "./sandbox_options.ts";

/**
 * One sandbox. Starts lazily on the first request.
 *
 * @example
 * ```ts ignore
 * const sb = new Sandbox({ label: "files[r]", grant, modules: [file], policy, workspace });
 * const result = await sb.call(file, "WordCount", { filepath: "README.md" });
 * await sb.close();
 * ```
 */
export class Sandbox {
  readonly options: SandboxOptions;
  #transport: Transport | undefined;
  #pending = new Map<number, _Pending>();
  #nextId = 1;
  #closed = false;
  #starts = 0;
  #envSent: SandboxEnv | undefined;
  #envTransport: Transport | undefined;
  #pid: number | undefined;

  constructor(options: SandboxOptions) {
    this.options = options;
  }

  /** How many times a sandbox was started (1 after the first call; more after recycling). */
  get starts(): number {
    return this.#starts;
  }

  /** The process id of a process sandbox that is running now. */
  get pid(): number | undefined {
    return this.#pid;
  }

  /** Whether a sandbox is running now. */
  get running(): boolean {
    return this.#transport !== undefined;
  }

  /** Import each request's modules (in this realm, with its environment); describe their tools. */
  load(requests: LoadRequest[]): Promise<ModuleMeta[][]> {
    return this.#loads(requests);
  }

  /**
   * Each request's modules in a worker of its own (a process sandbox shared
   * by plugins at discovery), all sent in one message: every request is read
   * from stdin before any plugin code runs, so none can read another's.
   */
  loadIsolated(requests: LoadRequest[]): Promise<ModuleMeta[][]> {
    return this.#loads(requests, []);
  }

  async #loads(requests: LoadRequest[], batch?: HostMessage[]): Promise<ModuleMeta[][]> {
    const refused = await this.#verify();
    const fail = (r: LoadRequest, error: string) =>
      r.modules.map((module) => ({ module, tools: [], problems: [], error }));
    if (refused) return requests.map((r) => fail(r, refused));
    // The sandbox imports the pinned copies; what comes back names the original files.
    const code = this.#pinned;
    const answers = requests.map((r) =>
      this.#request((id) => insideLoad(code, id, r), "(import)", r, batch)
    );
    if (batch?.length) this.#transport?.send({ type: "loads", loads: batch as _Load[] });
    return (await Promise.all(answers)).map((msg, i) =>
      msg.type === "loaded"
        ? outsideMetas(code, requests[i].modules, acceptMetas, msg.modules)
        : fail(requests[i], msg.type === "result" ? msg.result.error ?? "failed" : "failed")
    );
  }

  /**
   * Run one tool call. Never throws: every outcome is a {@link ToolResult}.
   * What it wrote is settled when it ends (core/layers/, ./settled_result.ts):
   * its changes marked on the result; any not applied fail it, saying which.
   * A sandbox killed under it settles once more: that is the call's (./last_changes.ts).
   */
  async call(
    module: string,
    tool: string,
    args: unknown,
    env: SandboxEnv,
    options: CallOptions = {},
  ): Promise<ToolResult> {
    // Busy from its view's refresh until its own settlement is done: the settling of
    // writes between calls (follow) waits, so what the call wrote is judged for it.
    this.#calling++;
    const on: { t?: Transport } = {}; // the sandbox run the call was sent to
    try {
      await this.#freshen();
      const result = await this.#call(module, tool, args, env, options, on);
      const run = on.t && this.#runs.get(on.t);
      return await settleAfter(run?.settles(on.t === this.#transport), result, tool);
    } finally {
      this.#calling--;
      if (on.t) this.#runs.get(on.t)?.leave(options.hold);
    }
  }

  /** Calls begun and not yet settled. */
  #calling = 0;

  readonly #runs = new WeakMap<Transport, LastChanges>();

  /**
   * Before a call: the sandbox's view of the tree is refreshed in place when
   * others changed the tree (or a change of its own was not applied): the
   * same process goes on (core/layers/view_refresh.ts).
   */
  async #freshen(): Promise<void> {
    await this.#transport?.layers?.refresh(this.#pending.size === 0);
  }

  async #call(
    module: string,
    tool: string,
    args: unknown,
    env: SandboxEnv,
    options: CallOptions,
    on: { t?: Transport },
  ): Promise<ToolResult> {
    const refused = await this.#verify();
    if (refused) return withFault(failure(tool, refused), "error", "sandbox_refused");
    const msg = await this.#request(
      (id) => {
        on.t = this.#transport;
        if (on.t) this.#runs.get(on.t)?.enter(options.hold);
        // The environment is sent once per running sandbox and again only
        // when it changes: calls stay small messages.
        const path = insidePath(this.#pinned, module);
        if (this.#envSent === env && this.#envTransport === this.#transport) {
          return { type: "call", id, module: path, tool, args };
        }
        this.#envSent = env;
        this.#envTransport = this.#transport;
        const net = this.options.grant.net.length > 0;
        const inside = insideEnv(env, this.options.policy, !!this.#namespace, net);
        return { type: "call", id, module: path, tool, args, env: inside };
      },
      tool,
      options,
    );
    const { result, fault } = resultOf(msg, tool);
    if (typeof result.error === "string") result.error = outsideText(this.#pinned, result.error);
    if (result.timed_out === true && this.options.policy.isolation === "process") {
      // Something the tool started ran out of time: the whole sandbox goes,
      // with every process it still holds (a fresh one serves the next call).
      this.#recycle(`was reset: a process of ${tool} timed out`);
    }
    const capped = capResult(result, this.options.policy.max_output_bytes);
    return fault && !capped.success ? withFault(capped, fault.outcome, fault.reason) : capped;
  }

  /**
   * Stop the sandbox; pending calls fail. Resolves when its process is gone
   * and its placeholders removed (at most 5 s), so that a command that ends
   * leaves nothing in the workspace.
   */
  close(): Promise<void> {
    this.#closed = true;
    const ended = this.#transport?.ended;
    this.#recycle("the host is shutting down");
    this.#timer.stop();
    if (!ended) return Promise.resolve();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const cap = new Promise<void>((r) => timer = setTimeout(r, 5000));
    return Promise.race([ended, cap]).finally(() => clearTimeout(timer));
  }

  #request(
    make: (id: number) => HostMessage,
    tool: string,
    options: CallOptions,
    batch?: HostMessage[],
  ): Promise<SandboxMessage> {
    if (this.#closed) {
      return Promise.resolve(this.#fail(tool, "the sandbox is closed", "closed"));
    }
    const id = this.#nextId++;
    const timeoutMs = Math.max(1, options.timeoutMs ?? this.options.policy.timeout_ms);
    return new Promise<SandboxMessage>((resolve) => {
      let done = false;
      const finish = (msg: SandboxMessage) => {
        if (done) return;
        done = true;
        this.#pending.delete(id);
        if (this.#pending.size === 0) this.#timer.stop();
        options.signal?.removeEventListener("abort", onAbort);
        resolve(msg);
      };
      const onAbort = () => {
        finish(this.#fail(tool, "cancelled"));
        this.#abandon(id, `a call to ${tool} was cancelled`);
      };
      if (options.signal?.aborted) return resolve(this.#fail(tool, "cancelled"));
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.#pending.set(id, {
        tool,
        resolve: finish,
        onReport: options.onReport,
        onLog: options.onLog,
        onAsk: options.onAsk,
        deadline: performance.now() + timeoutMs,
        ...(tool === "(import)" && !this.#transport ? { afterStart: timeoutMs } : {}),
        onTimeout: () => {
          finish({
            type: "result",
            id,
            result: {
              success: false,
              error: new ToolTimeoutError(tool, timeoutMs).message,
              timed_out: true,
            },
            fault: { outcome: "error", reason: "timeout" },
          });
          const why = `a call to ${tool} timed out after ${timeoutMs} ms`;
          // A process sandbox is killed whole: every process it started, its CPU.
          if (this.options.policy.isolation === "process") this.#recycle(why);
          else this.#abandon(id, why);
        },
      });
      this.#timer.schedule(timeoutMs);
      try {
        const transport = this.#ensure();
        if (batch) batch.push(make(id));
        else transport.send(make(id));
      } catch (err) {
        finish(this.#fail(tool, `sandbox failed to start: ${(err as Error).message}`, "start"));
      }
    });
  }

  // One timer per sandbox, set for the earliest deadline (./_deadline_timer.ts).
  readonly #timer = new DeadlineTimer(() => this.#pending.values());

  /**
   * Before a sandbox starts: its module files must still be what discovery
   * checked. Returns why not, or undefined.
   */
  async #verify(): Promise<string | undefined> {
    if (this.#transport) return undefined;
    // The copies are gone (a cleared cache): make them again from files that match their pins.
    if (pinnedGone(this.#pinned)) await this.prepare(true);
    return this.#refused ?? (this.options.discovery ? undefined : pinsRefusal(this.options.pins));
  }

  #fail(tool: string, reason: string, why = "cancelled"): SandboxMessage {
    return { type: "result", id: 0, result: _fault(failure(tool, reason), why) };
  }

  /** A call was given up: tell the sandbox, and recycle it if it no longer answers. */
  #abandon(id: number, why: string): void {
    const t = this.#transport;
    if (!t) return;
    try {
      t.send({ type: "cancel", id });
    } catch { /* already gone */ }
    const pingId = this.#nextId++;
    const timer = setTimeout(() => {
      if (!this.#pending.has(pingId)) return;
      this.#pending.delete(pingId);
      if (this.#transport === t) this.#recycle(`${why} and the sandbox stopped answering`);
    }, _PING_GRACE_MS);
    this.#pending.set(pingId, {
      tool: "(ping)",
      resolve: () => {
        this.#pending.delete(pingId);
        clearTimeout(timer);
      },
    });
    try {
      t.send({ type: "ping", id: pingId });
    } catch { /* already gone */ }
  }

  /** Kill the sandbox; every pending request fails with `reason`. */
  #recycle(reason: string): void {
    const t = this.#transport;
    this.#transport = undefined;
    try {
      t?.kill();
    } catch { /* already gone */ }
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) {
      p.resolve({ type: "result", id: 0, result: _fault(failure(p.tool, `sandbox ${reason}`)) });
    }
  }

  #onMessage(t: Transport, msg: SandboxMessage): void {
    if (t !== this.#transport) return; // a recycled sandbox speaking late
    switch (msg.type) {
      case "ready": {
        // A process sandbox reports what it still holds; env, sys and ffi are never allowed.
        const kept = ["env", "sys", "ffi"].filter((k) => msg.held?.[k] === "granted");
        if (kept.length) this.#recycle(`still held ${kept.join(", ")} after dropping its grant`);
        return this.#timer.started(); // an import's limit runs from here, not from its spawn
      }
      case "log": {
        const p = msg.id !== undefined ? this.#pending.get(msg.id) : undefined;
        const text = outsideText(this.#pinned, String(msg.text));
        if (p?.onLog) p.onLog(text);
        else this.options.onLog?.(text, msg.id);
        return;
      }
      case "report": {
        const p = this.#pending.get(msg.id);
        if (!p) return this.#unknown(msg.id, msg.type);
        p.onReport?.(msg.kind, String(msg.message), msg.options);
        return;
      }
      case "ask": {
        // Only on behalf of a call running in this sandbox; its client answers.
        const p = this.#pending.get(msg.id);
        const send = (m: HostMessage) => this.#transport === t && t.send(m);
        // askId 0: the runtime telling of an ask through a context whose call has ended.
        if (!p || msg.askId === 0 || !["sample", "elicit", "roots"].includes(msg.kind)) {
          return refuseAsk(msg, ++this.#refusedAsks, send, this.options.onAskRefused);
        }
        return answerAsk(msg, p.onAsk, send);
      }
      case "result":
      case "loaded":
      case "pong": {
        const p = this.#pending.get(msg.id);
        if (!p) return this.#unknown(msg.id, msg.type);
        p.resolve(msg);
        return;
      }
      default:
        this.options.onLog?.(`dropped an unknown message from sandbox ${this.options.label}`);
    }
  }

  #refusedAsks = 0;

  #unknown(id: unknown, type: string): void {
    const what = `a "${type}" message for unknown call id ${JSON.stringify(id)}`;
    this.options.onLog?.(`dropped ${what} from sandbox ${this.options.label}`);
  }

  #ensure(): Transport {
    if (this.#transport) return this.#transport;
    this.#starts++;
    const read = this.#prepared;
    if (!read) throw new Error("sandbox not prepared");
    const o = this.options;
    const spec: TransportSpec = {
      ...o,
      read,
      imports: o.imports ?? [],
      code: this.#code,
      namespace: this.#namespace,
    };
    // The hooks know their transport: a recycled sandbox speaking late is ignored.
    const self: { t?: Transport } = {};
    const hooks: TransportHooks = {
      onMessage: (msg) => this.#onMessage(self.t!, msg),
      onExit: (reason) => {
        if (this.#pid === self.t?.pid) this.#pid = undefined;
        if (self.t === this.#transport) this.#recycle(reason);
      },
      onLog: (text) => this.options.onLog?.(text),
      // Its last settlement: the calls' it ended under, else reported apart.
      onChanges: (report) => run.ended(report),
    };
    const run = new LastChanges((r) => this.options.onChanges?.(r), () => self.t?.ended);
    const t = self.t = o.policy.isolation === "process"
      ? startProcess(spec, hooks)
      : startWorker(spec, hooks);
    run.layers = t.layers;
    this.#runs.set(t, run);
    // What processes left running write is settled while no call runs; reported apart.
    t.layers?.follow(
      () => this.#pending.size > 0 || this.#calling > 0,
      (r) => this.options.onChanges?.(r),
    );
    this.#pid = t.pid;
    this.#transport = t;
    return t;
  }

  #prepared: string[] | undefined;
  #pinned: PinnedCode | undefined;
  #refused: string | undefined;
  #code: string[] = [];
  #namespace: SandboxNamespace | undefined;

  /**
   * Compute the read list (module graphs: the pinned files when pinned) and,
   * for a namespaced process sandbox, its mounts. Call before the first
   * request.
   */
  async prepare(again = false): Promise<void> {
    if (this.#prepared && !again) return;
    const o = this.options;
    const files = await prepareSandboxFiles({ ...o, process: o.policy.isolation === "process" });
    this.#namespace = files.namespace;
    this.#code = files.code;
    this.#pinned = files.pinned;
    this.#refused = files.refused;
    this.#prepared = files.read;
  }
}

/** A failure of the sandbox, not the tool's own answer: corral's `error` (core/tool/result.ts). */
function _fault(result: ToolResult, reason = "crashed"): ToolResult {
  return withFault(result, "error", reason);
}
