/**
 * One hosted server's life: started in its sandbox on the first call
 * (./launch.ts), spoken to through the MCP SDK's Client
 * (`@modelcontextprotocol/client` 2.x) over a checked stdio channel
 * (./_stdio_channel.ts) except for `tools/call`, which takes corral's own
 * lane on that channel (./call_lane.ts; `CORRAL_BENCH_HOSTED_LANE=sdk` sends
 * it through the SDK's Client too, ./_client_calls.ts, for the benchmark's
 * row that weighs the lane: {@link hostedLane}); restarted with back-off
 * after a crash, killed on a timeout (the next call starts it again) or
 * when it ignores a call's cancellation (./_cancel_watch.ts; a cancelled
 * call alone fails, its other calls go on), and marked failed with the
 * reason when it will not start or does not speak MCP.
 * Questions (sampling, elicitation), progress and logs go to the call that
 * is running.
 *
 * @module
 */
import { Client, ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/client";
import { servedBy } from "./_asking_through.ts";
import { pinned, type ToolDefinition } from "./approvals.ts";
import { CallLane, CallTimedOut, type LaneCall } from "./call_lane.ts";
import { CancelWatch } from "./_cancel_watch.ts";
import { ClientCalls } from "./_client_calls.ts";
import { envVar } from "../config/mod.ts";
import type { HoldRequest, SandboxLayers } from "../layers/mod.ts";
import { LastChanges, type Settles } from "../sandbox/mod.ts";

export { CallCancelled, CallTimedOut } from "./call_lane.ts";
import { type Launched, launchServer, type LaunchSpec } from "./launch.ts";
import { OutputBudget } from "./_output_budget.ts";
import { type ChannelEventKind, type OutputBudgets, StdioChannel } from "./_stdio_channel.ts";

/** What one call of a hosted tool brings along. */
export interface HostedCall {
  timeoutMs: number;
  signal?: AbortSignal;
  onProgress?: (progress: number, total?: number, message?: string) => void;
  onLog?: (text: string) => void;
  onAsk?: (kind: "sample" | "elicit", params: unknown) => Promise<unknown>;
  /** Hold the call's changes for review instead of applying them (core/layers/hold_state.ts). */
  hold?: HoldRequest;
}

/** Hooks of a {@link HostedServer}. */
export interface HostedServerHooks {
  /** The tools a start (or a `tools/list_changed`) listed. */
  onTools(tools: ToolDefinition[]): void;
  /** A refusal or a lifecycle event, for the audit log. */
  onEvent(
    kind: ChannelEventKind | "crashed" | "failed" | "timeout" | "cancel_ignored",
    detail: string,
  ): void;
  /** A log line of the server (stderr, or a log notification outside a call). */
  onLog(text: string): void;
}

/** The first back-off after a crash; it doubles up to {@link MAX_BACKOFF_MS}. */
export const FIRST_BACKOFF_MS = 500;
/** The longest back-off between starts. */
export const MAX_BACKOFF_MS = 30_000;

/** A hosted server: idle until its first call. */
export class HostedServer {
  /** `idle`, `running`, or `failed` (with `reason`). */
  state: "idle" | "running" | "failed" = "idle";
  reason?: string;
  /** The tools the running server lists. */
  tools: ToolDefinition[] = [];
  /** How many times it was started. */
  starts = 0;
  readonly #spec: LaunchSpec;
  readonly #hooks: HostedServerHooks;
  #starting?: Promise<Client>;
  #client?: Client;
  /** Where its `tools/call` requests go: corral's lane, or the SDK client ({@link hostedLane}). */
  #lane?: _Calls;
  #launched?: Launched;
  /** The running process's calls and last settlement (../sandbox/last_changes.ts). */
  #run?: LastChanges;
  /** The process each call was sent to. */
  readonly #runOf = new WeakMap<HostedCall, LastChanges>();
  #failures = 0;
  #notBefore = 0;
  #calls = new Set<HostedCall>();
  /** Calls whose writes are being settled for them ({@link holding}). */
  #held = 0;
  /** Its stderr and log bytes: one budget for the session, across restarts. */
  readonly #output: OutputBudgets = { stderr: new OutputBudget(), log: new OutputBudget() };

  constructor(spec: LaunchSpec, hooks: HostedServerHooks) {
    this.#spec = spec;
    this.#hooks = hooks;
  }

  /** The secret values of its environment (known once started). */
  get secrets(): string[] {
    return this.#launched?.secrets ?? [];
  }

  /** Start it unless running; the tools it lists are passed to `onTools`. */
  ensure(): Promise<Client> {
    if (this.#client) return Promise.resolve(this.#client);
    const wait = this.#notBefore - performance.now();
    if (wait > 0) {
      return Promise.reject(
        new Error(
          `${this.reason ?? "it stopped"}; the next start is in ${Math.ceil(wait / 1000)} s`,
        ),
      );
    }
    return this.#starting ??= this.#start().finally(() => this.#starting = undefined);
  }

  /** Call `name` (the server's own name for the tool). */
  async call(name: string, args: unknown, call: HostedCall): Promise<Record<string, unknown>> {
    await this.#freshen();
    await this.ensure();
    const lane = this.#lane;
    if (!lane) throw new Error("the server's connection is closed");
    if (this.#run && !this.#runOf.has(call)) {
      this.#runOf.set(call, this.#run);
      this.#run.enter(call.hold);
    }
    this.#calls.add(call);
    try {
      return await lane.call(name, args, call);
    } catch (err) {
      if (err instanceof CallTimedOut) {
        // The call is killed with the whole server; the next call starts it again.
        this.#hooks.onEvent("timeout", `${name} timed out after ${call.timeoutMs} ms`);
        void this.stop();
      }
      throw err;
    } finally {
      this.#calls.delete(call);
    }
  }

  /**
   * Run `fn` (`call`, then the settlement of what it wrote) as busy: the
   * settling of writes between calls waits, so what a call wrote is judged
   * for that call, never reported apart as if written between calls. `fn`
   * gets what settles the call's writes: the layers of the process it ran
   * on, or, when that process ended under it (killed, crashed, stopped),
   * its last settlement (../sandbox/last_changes.ts).
   */
  async holding<T>(
    call: HostedCall,
    fn: (settles: () => Settles | undefined) => Promise<T>,
  ): Promise<T> {
    this.#held++;
    try {
      return await fn(() => {
        const run = this.#runOf.get(call);
        return run?.settles(run === this.#run);
      });
    } finally {
      this.#held--;
      this.#runOf.get(call)?.leave(call.hold);
      this.#runOf.delete(call);
    }
  }

  /** Run `run` as one call of this server whose questions `onAsk` answers. */
  async asking<T>(onAsk: NonNullable<HostedCall["onAsk"]>, run: () => Promise<T>): Promise<T> {
    const call: HostedCall = { timeoutMs: 0, onAsk };
    this.#calls.add(call);
    try {
      return await run();
    } finally {
      this.#calls.delete(call);
    }
  }

  /**
   * Before a call: the server's view of the tree is refreshed in place when
   * others changed the tree (or a change of its own was not applied); the
   * server keeps running, with its memory (core/layers/view_refresh.ts).
   */
  async #freshen(): Promise<void> {
    await this.#launched?.layers?.refresh(this.#calls.size === 0 && this.#held <= 1);
  }

  /** The running server's write layers (core/layers/), settled after each call. */
  get layers(): SandboxLayers | undefined {
    return this.#launched?.layers;
  }

  /**
   * Stop the server and everything it started; resolves once it has exited
   * and what it wrote last is settled.
   */
  stop(): Promise<void> {
    // A start under way ends itself when it sees this (#start): its server killed, not kept.
    this.#stops++;
    const starting = this.#starting?.then(() => {}, () => {});
    const launched = this.#launched;
    this.#client = undefined;
    this.#lane = undefined;
    this.#launched = undefined;
    this.#run = undefined;
    if (this.state === "running") this.state = "idle";
    launched?.kill();
    const gone = launched ? launched.exited.then(() => {}) : Promise.resolve();
    return starting ? Promise.all([gone, starting]).then(() => {}) : gone;
  }

  /** How many times it was stopped: a start that sees this change was stopped under it. */
  #stops = 0;

  async #start(): Promise<Client> {
    this.starts++;
    const stops = this.#stops;
    let launched: Launched | undefined;
    // Its last settlement: the calls' it ended under, else a line apart.
    const run = new LastChanges((r) => this.#spec.onChanges?.(r), () => launched?.exited);
    try {
      launched = await launchServer({ ...this.#spec, onChanges: (r) => run.ended(r) });
      run.layers = launched.layers;
      const [client, lane] = await this.#connect(launched);
      if (stops !== this.#stops) throw new _StoppedWhileStarting();
      this.#launched = launched;
      this.#run = run;
      this.#client = client;
      this.#lane = lane;
      // What it writes between calls is settled while no call runs; reported apart.
      launched.layers?.follow(
        () => this.#calls.size > 0 || this.#held > 0,
        (r) => this.#spec.onChanges?.(r),
      );
      this.state = "running";
      this.reason = undefined;
      this.#failures = 0;
      launched.exited.then((why) => this.#exited(launched!, why));
      return client;
    } catch (err) {
      launched?.kill();
      if (err instanceof _StoppedWhileStarting || stops !== this.#stops) {
        // Stopped (its session ended) while starting: gone with all it started; no failure.
        await launched?.exited;
        throw new Error(`server "${this.#spec.entry.name}" was stopped while starting`);
      }
      const why = (err as Error).message;
      this.#fail(`will not start: ${why}`);
      throw new Error(`server "${this.#spec.entry.name}" will not start: ${why}`);
    }
  }

  async #connect(launched: Launched): Promise<[Client, _Calls]> {
    let garbage = 0;
    let tail = "";
    const onIgnored = (why: string) => {
      if (this.#lane !== lane) return;
      // It ignores a cancellation: killed with its other calls; the next call starts it again.
      this.#hooks.onEvent("cancel_ignored", why);
      void this.stop();
    };
    const server = this.#spec.entry.name;
    const watch = new CancelWatch(onIgnored);
    const callLane = hostedLane() === "lane"
      ? new CallLane(server, (line) => channel.write(line), onIgnored)
      : undefined;
    const channel: StdioChannel = new StdioChannel(launched.child, {
      lane: callLane,
      watch,
      output: this.#output,
      onEvent: (kind, detail, count) => {
        if (kind === "garbage") garbage = count;
        this.#hooks.onEvent(kind, `${detail} (${count} so far)`);
      },
      onStderr: (line) => {
        if (line.trim()) tail = line.trim().slice(0, 300);
        this.#hooks.onLog(line);
      },
    });
    const client = new Client(
      { name: "corral", version: "0.1.0" },
      {
        // Sampling with tools passes through; a client of corral's that cannot is refused then.
        capabilities: { sampling: { tools: {} }, elicitation: {} },
        // A listing walks at most this many pages; a server with more fails it, never cut short.
        listMaxPages: MAX_LIST_PAGES,
      },
    );
    const lane: _Calls = callLane ?? new ClientCalls(server, client, watch, onIgnored);
    servedBy(client, this);
    client.setRequestHandler("sampling/createMessage", (r) => this.#ask("sample", r.params));
    client.setRequestHandler("elicitation/create", (r) => this.#ask("elicit", r.params));
    client.setNotificationHandler("notifications/message", (n) => {
      const text = typeof n.params.data === "string"
        ? n.params.data
        : JSON.stringify(n.params.data);
      const line = `[${n.params.level}] ${text}`;
      const calls = [...this.#calls];
      if (calls.length === 1 && calls[0].onLog) calls[0].onLog(line);
      else this.#hooks.onLog(line);
    });
    client.setNotificationHandler("notifications/tools/list_changed", async () => {
      this.tools = await _listTools(client, lane, this.#spec.entry.startTimeoutMs).catch(() =>
        this.tools
      );
      this.#hooks.onTools(this.tools);
    });
    const timeout = this.#spec.entry.startTimeoutMs;
    try {
      await client.connect(channel, { timeout });
      this.tools = await _listTools(client, lane, timeout);
    } catch (err) {
      const why = garbage
        ? `it does not speak MCP on stdout (${garbage} lines that are not JSON-RPC)`
        : await Promise.race([
          launched.exited,
          new Promise<string>((r) => setTimeout(() => r((err as Error).message), 200)),
        ]);
      throw new Error(tail && !garbage ? `${why}: ${tail}` : why);
    }
    this.#hooks.onTools(this.tools);
    return [client, lane];
  }

  /** A question of the server goes to the one call running, else it is refused. */
  #ask(kind: "sample" | "elicit", params: unknown): Promise<never> {
    const calls = [...this.#calls];
    if (calls.length !== 1 || !calls[0].onAsk) {
      return Promise.reject(
        new ProtocolError(
          ProtocolErrorCode.InvalidRequest,
          calls.length > 1
            ? `corral cannot tell which of ${calls.length} running calls this ${kind} belongs to`
            : `no client can answer a ${kind} request here`,
        ),
      );
    }
    return calls[0].onAsk(kind, params) as Promise<never>;
  }

  #exited(launched: Launched, why: string): void {
    if (this.#launched !== launched) return; // stopped on purpose
    this.#client = undefined;
    this.#lane = undefined;
    this.#launched = undefined;
    this.#run = undefined;
    this.#hooks.onEvent("crashed", why);
    this.#fail(`crashed: ${why}`);
  }

  #fail(reason: string): void {
    this.state = "failed";
    this.reason = reason;
    this.#hooks.onEvent("failed", reason);
    this.#notBefore = performance.now() +
      Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** this.#failures);
    this.#failures++;
  }
}

/**
 * Every page of the server's tools (walked by the SDK, which keeps them for
 * its output-schema checks), pinned; the lane learns them too. A server that
 * does not offer tools lists none.
 */
async function _listTools(
  client: Client,
  lane: _Calls,
  timeout: number,
): Promise<ToolDefinition[]> {
  const raw = client.getServerCapabilities()?.tools
    ? (await client.listTools(undefined, { timeout, cacheMode: "refresh" })).tools
    : [];
  lane.setTools(raw as Record<string, unknown>[]);
  return raw.map((t) => pinned(t as unknown as ToolDefinition));
}

/** Pages of one listing (tools, resources, prompts) the client walks at most. */
export const MAX_LIST_PAGES = 100;

/**
 * Where hosted `tools/call` requests go: corral's own lane on the checked
 * channel (`lane`, the default), or the plain SDK `Client` (`sdk`).
 * `CORRAL_BENCH_HOSTED_LANE=sdk` chooses the latter, for the benchmark's
 * row that weighs the lane against the plain SDK path (bench/hosted.ts,
 * section 9) and nothing else: both make the same checks.
 */
export function hostedLane(): "lane" | "sdk" {
  return envVar("CORRAL_BENCH_HOSTED_LANE") === "sdk" ? "sdk" : "lane";
}

/** What carries a server's `tools/call` requests (./call_lane.ts or ./_client_calls.ts). */
interface _Calls {
  setTools(tools: ReadonlyArray<Record<string, unknown>>): void;
  call(tool: string, args: unknown, call: LaneCall): Promise<Record<string, unknown>>;
}

/** A start that was stopped under it (its session ended meanwhile). */
class _StoppedWhileStarting extends Error {}
