/**
 * Host side of a sandbox: a permissioned Web Worker (isolation "worker") or
 * a child `deno run` holding a permissioned worker (isolation "process").
 * Calls are multiplexed by id, timed out, cancelled, capped, and a sandbox
 * that stops answering is recycled; the next call gets a fresh one.
 *
 * @module
 */
import { basename } from "node:path";
import { ToolTimeoutError } from "../tool/errors.ts";
import { localModuleGraph } from "../plugins/module_graph.ts";
import type { SandboxPolicy } from "../config/policy.ts";
import {
  FRAME_MARK,
  type HostMessage,
  type ModuleMeta,
  type SandboxEnv,
  type SandboxMessage,
} from "./protocol.ts";
import { capResult, failure, type ToolResult } from "../tool/result.ts";
import type { Grant, ReportKind, ReportOptions } from "../tool/tool.ts";

/** What a sandbox is made of. */
export interface SandboxOptions {
  /** Label for messages, e.g. `files[r]`. */
  label: string;
  /** Paths, commands and hosts the tool code may use. */
  grant: Grant;
  /** Module files the sandbox may import (read access is given to their graph). */
  modules: string[];
  /** Limits and isolation. */
  policy: SandboxPolicy;
  /**
   * Hosts remote module code may be imported from (a package plugin given
   * as `https:` or `jsr:`); it must already be in Deno's cache, since
   * process sandboxes run `--cached-only`. Default: none.
   */
  imports?: string[];
  /** The workspace (the process sandbox's current directory). */
  workspace: string;
  /** Output of tool code that is not a protocol message. */
  onLog?: (text: string, callId?: number) => void;
}

/** Per-call hooks and limits. */
export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  onReport?: (kind: ReportKind, message: string, options?: ReportOptions) => void;
  onLog?: (text: string) => void;
  config?: unknown;
}

interface _Pending {
  tool: string;
  resolve: (msg: SandboxMessage) => void;
  onReport?: CallOptions["onReport"];
  onLog?: CallOptions["onLog"];
  /** `performance.now()` after which the request times out. */
  deadline?: number;
  onTimeout?: () => void;
}

interface _Transport {
  send(msg: HostMessage): void;
  kill(): void;
}

const _WORKER_ENTRY = new URL("./sandbox_worker.ts", import.meta.url).pathname;
const _CHILD_ENTRY = new URL("./sandbox_child.ts", import.meta.url).pathname;
const _CONFIG = new URL("../../deno.json", import.meta.url).pathname;
const _PING_GRACE_MS = 1000;

/**
 * The commands Deno lets a sandbox run: the grant's `run` list, plus the
 * bwrap binary when the grant is jailed, or ONLY bwrap when the jail is
 * exclusive (plugins: the listed commands then run inside it, and
 * `runSubprocess` checks them).
 *
 * @example
 * ```ts
 * import { denoRunList } from "./sandbox.ts";
 * const g = { read: [], write: [], net: [], run: ["bash"] };
 * console.assert(denoRunList(g)[0] === "bash");
 * const jail = { bwrap: "/usr/bin/bwrap", write: [], net: false, exclusive: true };
 * console.assert(denoRunList({ ...g, jail }).join() === "/usr/bin/bwrap");
 * ```
 */
export function denoRunList(grant: Grant): string[] {
  if (!grant.jail || !grant.run.length) return grant.run;
  return grant.jail.exclusive ? [grant.jail.bwrap] : [...grant.run, grant.jail.bwrap];
}

/**
 * Whether this host is a compiled corral binary (`deno compile`): then
 * `Deno.execPath()` is corral itself, not `deno`, and a process sandbox is
 * `corral __sandbox-child`.
 *
 * @example
 * ```ts
 * import { selfHosted } from "./sandbox.ts";
 * console.assert(selfHosted() === false); // under `deno run` / `deno test`
 * ```
 */
export function selfHosted(): boolean {
  return !/^deno(\.exe)?$/.test(basename(Deno.execPath()));
}

let _entryGraph: Promise<string[]> | undefined;
/** The files the sandbox entry points import (read access for the sandbox). */
export function sandboxEntryFiles(): Promise<string[]> {
  return _entryGraph ??= localModuleGraph([_WORKER_ENTRY, _CHILD_ENTRY]);
}

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
  #transport: _Transport | undefined;
  #pending = new Map<number, _Pending>();
  #nextId = 1;
  #closed = false;
  #starts = 0;
  #envSent: SandboxEnv | undefined;
  #envTransport: _Transport | undefined;
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

  /** Import modules and describe their tools. */
  async load(modules: string[], env: SandboxEnv, timeoutMs: number): Promise<ModuleMeta[]> {
    const msg = await this.#request(
      (id) => ({ type: "load", id, modules, env }),
      "(import)",
      { timeoutMs },
    );
    if (msg.type === "loaded") return msg.modules;
    const error = msg.type === "result" ? msg.result.error ?? "failed" : "failed";
    return modules.map((module) => ({ module, tools: [], problems: [], error }));
  }

  /** Run one tool call. Never throws: every outcome is a {@link ToolResult}. */
  async call(
    module: string,
    tool: string,
    args: unknown,
    env: SandboxEnv,
    options: CallOptions = {},
  ): Promise<ToolResult> {
    const msg = await this.#request(
      (id) => {
        // The environment is sent once per running sandbox and again only
        // when it changes: calls stay small messages.
        if (this.#envSent === env && this.#envTransport === this.#transport) {
          return { type: "call", id, module, tool, args };
        }
        this.#envSent = env;
        this.#envTransport = this.#transport;
        return {
          type: "call",
          id,
          module,
          tool,
          args,
          env: { ...env, maxOutputBytes: this.options.policy.max_output_bytes },
        };
      },
      tool,
      options,
    );
    const result = msg.type === "result" ? msg.result : failure(tool, "no result from sandbox");
    return capResult(result, this.options.policy.max_output_bytes);
  }

  /** Stop the sandbox; pending calls fail. */
  close(): Promise<void> {
    this.#closed = true;
    this.#recycle("the host is shutting down");
    this.#unschedule();
    return Promise.resolve();
  }

  #request(
    make: (id: number) => HostMessage,
    tool: string,
    options: CallOptions,
  ): Promise<SandboxMessage> {
    if (this.#closed) {
      return Promise.resolve(this.#fail(tool, "the sandbox is closed"));
    }
    const id = this.#nextId++;
    const timeoutMs = Math.max(1, options.timeoutMs ?? this.options.policy.timeout_ms);
    return new Promise<SandboxMessage>((resolve) => {
      let done = false;
      const finish = (msg: SandboxMessage) => {
        if (done) return;
        done = true;
        this.#pending.delete(id);
        if (this.#pending.size === 0) this.#unschedule();
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
        deadline: performance.now() + timeoutMs,
        onTimeout: () => {
          finish({
            type: "result",
            id,
            result: {
              success: false,
              error: new ToolTimeoutError(tool, timeoutMs).message,
              timed_out: true,
            },
          });
          this.#abandon(id, `a call to ${tool} timed out after ${timeoutMs} ms`);
        },
      });
      this.#schedule(timeoutMs);
      try {
        const transport = this.#ensure();
        transport.send(make(id));
      } catch (err) {
        finish(this.#fail(tool, `sandbox failed to start: ${(err as Error).message}`));
      }
    });
  }

  // One timer per sandbox, set for the earliest deadline, instead of a
  // timer per call: thousands of concurrent calls stay cheap.
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = Infinity;

  #schedule(inMs: number): void {
    const at = performance.now() + inMs;
    if (this.#timer !== undefined && this.#timerAt <= at) return;
    clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, inMs));
  }

  #unschedule(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  #expire(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const p of [...this.#pending.values()]) {
      if (p.deadline === undefined) continue;
      if (p.deadline <= now + 1) p.onTimeout?.();
      else next = Math.min(next, p.deadline);
    }
    if (next !== Infinity) this.#schedule(next - now);
  }

  #fail(tool: string, reason: string): SandboxMessage {
    return { type: "result", id: 0, result: failure(tool, reason) };
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
      p.resolve({ type: "result", id: 0, result: failure(p.tool, `sandbox ${reason}`) });
    }
  }

  #onMessage(t: _Transport, msg: SandboxMessage): void {
    if (t !== this.#transport) return; // a recycled sandbox speaking late
    switch (msg.type) {
      case "ready": {
        // A process sandbox reports what it still holds; env, sys and ffi are never allowed.
        const kept = ["env", "sys", "ffi"].filter((k) => msg.held?.[k] === "granted");
        if (kept.length) this.#recycle(`still held ${kept.join(", ")} after dropping its grant`);
        return;
      }
      case "log": {
        const p = msg.id !== undefined ? this.#pending.get(msg.id) : undefined;
        if (p?.onLog) p.onLog(String(msg.text));
        else this.options.onLog?.(String(msg.text), msg.id);
        return;
      }
      case "report": {
        const p = this.#pending.get(msg.id);
        if (!p) return this.#unknown(msg.id, msg.type);
        p.onReport?.(msg.kind, String(msg.message), msg.options);
        return;
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

  #unknown(id: unknown, type: string): void {
    this.options.onLog?.(
      `dropped a "${type}" message for unknown call id ${
        JSON.stringify(id)
      } from sandbox ${this.options.label}`,
    );
  }

  #onExit(t: _Transport, reason: string): void {
    if (t !== this.#transport) return;
    this.#recycle(reason);
  }

  #ensure(): _Transport {
    if (this.#transport) return this.#transport;
    this.#starts++;
    const t = this.options.policy.isolation === "process"
      ? this.#startProcess()
      : this.#startWorker();
    this.#transport = t;
    return t;
  }

  async #readList(): Promise<string[]> {
    return [
      ...this.options.grant.read,
      ...(await sandboxEntryFiles()),
      ...(await localModuleGraph(this.options.modules)),
    ];
  }

  #startWorker(): _Transport {
    // Worker options need the read list now; module graphs are computed
    // ahead by the registry (see prepare()).
    const read = this.#prepared;
    if (!read) throw new Error("sandbox not prepared");
    const g = this.options.grant;
    const list = (l: string[]) => l.includes("*") ? true : l.length ? [...new Set(l)] : false;
    const worker = new Worker(new URL(_WORKER_ENTRY, "file:///"), {
      type: "module",
      deno: {
        permissions: {
          read: list(read),
          write: list(g.write),
          run: list(denoRunList(g)),
          net: list(g.net),
          env: false,
          ffi: false,
          sys: false,
          import: list(this.options.imports ?? []),
        },
      },
    });
    const t: _Transport = {
      send: (msg) => worker.postMessage(msg),
      kill: () => worker.terminate(),
    };
    worker.onmessage = (e: MessageEvent<SandboxMessage>) => this.#onMessage(t, e.data);
    worker.onmessageerror = () => this.options.onLog?.("dropped an unreadable message");
    worker.onerror = (e) => {
      e.preventDefault();
      this.#onExit(t, `crashed: ${e.message}`);
    };
    return t;
  }

  #prepared: string[] | undefined;

  /** Compute the read list (module graphs). Call before the first request. */
  async prepare(): Promise<void> {
    this.#prepared ??= await this.#readList();
  }

  #startProcess(): _Transport {
    const read = this.#prepared;
    if (!read) throw new Error("sandbox not prepared");
    const g = this.options.grant;
    const p = this.options.policy;
    const flag = (name: string, l: string[]) =>
      l.includes("*")
        ? [`--allow-${name}`]
        : l.length
        ? [`--allow-${name}=${[...new Set(l)].join(",")}`]
        : [];
    const run = denoRunList(g);
    // A compiled corral binary re-runs itself as the child (its flags are fixed
    // at compile time; the child revokes down to the grant, see sandbox_child.ts).
    const args = selfHosted() ? ["__sandbox-child"] : [
      "run",
      "--no-prompt",
      "--cached-only",
      "--frozen",
      "--no-check",
      `--config=${_CONFIG}`,
      "--unstable-worker-options",
      ...flag("read", read),
      ...flag("write", g.write),
      ...flag("run", run),
      ...flag("net", g.net),
      ...flag("import", this.options.imports ?? []),
      `--v8-flags=--max-old-space-size=${p.memory_mb}`,
      _CHILD_ENTRY,
    ];
    const child = new Deno.Command(Deno.execPath(), {
      args,
      cwd: this.options.workspace,
      clearEnv: true,
      env: selfHosted()
        ? { ..._childEnv(), DENO_V8_FLAGS: `--max-old-space-size=${p.memory_mb}` }
        : _childEnv(),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#pid = child.pid;
    const token = crypto.randomUUID().replaceAll("-", "");
    const writer = child.stdin.getWriter();
    const enc = new TextEncoder();
    let dead = false;
    const write = (text: string) => {
      if (dead) return;
      writer.write(enc.encode(text)).catch(() => {});
    };
    const t: _Transport = {
      send: (msg) => write(JSON.stringify(msg) + "\n"),
      kill: () => {
        if (dead) return;
        dead = true;
        writer.close().catch(() => {});
        try {
          child.kill("SIGKILL");
        } catch { /* exited */ }
      },
    };
    write(token + "\n");
    write(
      JSON.stringify({
        read,
        write: g.write,
        run,
        net: g.net,
        import: this.options.imports ?? [],
      }) +
        "\n",
    );
    const mark = FRAME_MARK + token;
    // The sandbox caps results itself; this bounds what a hostile one can send.
    const limit = p.max_output_bytes + 1_048_576;
    let stderrTail = "";
    _readLines(child.stdout, limit, (line) => {
      const at = line.lastIndexOf(mark);
      if (at < 0) {
        this.options.onLog?.(line);
        return;
      }
      if (at > 0) this.options.onLog?.(line.slice(0, at));
      try {
        this.#onMessage(t, JSON.parse(line.slice(at + mark.length)) as SandboxMessage);
      } catch {
        this.options.onLog?.(`dropped a malformed message from sandbox ${this.options.label}`);
      }
    });
    _readLines(child.stderr, 65_536, (line) => {
      stderrTail = (stderrTail + line + "\n").slice(-4096);
      this.options.onLog?.(line);
    });
    child.status.then((status) => {
      dead = true;
      if (this.#pid === child.pid) this.#pid = undefined;
      const oom = /out of memory|heap limit|allocation failed/i.test(stderrTail) ||
        status.code === 133 || status.signal === "SIGTRAP";
      const why = oom
        ? `ran out of memory (limit ${p.memory_mb} MB) and was restarted`
        : `exited unexpectedly (code ${status.code}${status.signal ? `, ${status.signal}` : ""})${
          _lastLine(stderrTail)
        }`;
      this.#onExit(t, why);
    });
    return t;
  }
}

function _lastLine(text: string): string {
  // deno-lint-ignore no-control-regex
  const lines = text.replace(/\x1b\[[0-9;]*m/g, "").split("\n").map((l) => l.trim()).filter(
    Boolean,
  );
  const line = lines.find((l) => /error/i.test(l)) ?? lines.at(-1);
  return line ? `: ${line.slice(0, 300)}` : "";
}

function _childEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ["HOME", "DENO_DIR", "XDG_CACHE_HOME", "PATH", "LANG", "NO_COLOR"]) {
    try {
      const v = Deno.env.get(name);
      if (v !== undefined) env[name] = v;
    } catch { /* no env permission */ }
  }
  return env;
}

async function _readLines(
  stream: ReadableStream<Uint8Array>,
  limit: number,
  onLine: (line: string) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let buf = "";
  let skipping = false;
  try {
    for await (const chunk of stream) {
      buf += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (skipping) skipping = false;
        else onLine(line);
      }
      if (buf.length > limit) {
        buf = "";
        skipping = true; // drop the rest of an oversized line
        onLine(`[sandbox output line over ${limit} bytes dropped]`);
      }
    }
  } catch { /* stream closed */ }
  if (buf && !skipping) onLine(buf);
}
