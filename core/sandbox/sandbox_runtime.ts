/**
 * What runs inside every sandbox, around the tool code: it imports tool
 * modules (only those the host names), runs calls, and answers the host
 * through the one channel it is given. Tool code cannot end the sandbox
 * with `Deno.exit`, its output becomes the log of the call that printed
 * it, stdin is closed to it, and unhandled rejections are logged, not
 * fatal.
 *
 * Two entry points use it: the worker entry (./sandbox_worker.ts: worker
 * isolation, and a compiled binary's process sandbox) and the process
 * sandbox's child (./sandbox_child.ts), where the tool code runs in the
 * child's own realm, whose flags are the grant.
 *
 * @module
 */
import {
  capResult,
  collectTools,
  failure,
  faultOf,
  invokeTool,
  type ToolDefinition,
  VALID_EXPORT_EXAMPLE,
} from "../tool/mod.ts";
import {
  ASK_KEY_META,
  type AskKind,
  type HostMessage,
  type ModuleMeta,
  type SandboxEnv,
  type SandboxMessage,
} from "./protocol.ts";
import { configureNetGuard, configureSubprocesses } from "../guard/mod.ts";

let _started = false;
/** The one channel to the host (set by {@link runSandbox}). */
let _post: (msg: SandboxMessage) => void = () => {};
/**
 * Which call printed a line: the call's id travels in an async context, so
 * a timer or a rejection a call left behind stays that call's (or, once it
 * has ended, nobody's: the sandbox's log), never the next call's. The
 * context is Deno's own async variable, the one node:async_hooks'
 * AsyncLocalStorage is built on (`Deno[Deno.internal].core.AsyncVariable`:
 * it follows promises, timers and microtasks), so no sandbox starts Deno's
 * Node layer for it (about 4 MiB and a fifth of a small sandbox's start).
 * Where that is missing (another Deno), AsyncLocalStorage itself, loaded
 * by the first call.
 */
let _als: { run<R>(id: number, fn: () => R): R; getStore(): number | undefined } | undefined =
  _coreContext();
let _alsLoading: Promise<void> | undefined;

function _current(): number | undefined {
  return _als?.getStore();
}

/** The call context on Deno's core async variable, or undefined where Deno has none. */
function _coreContext(): typeof _als {
  try {
    const core = (Deno as unknown as Record<symbol, { core?: Record<string, unknown> }>)[
      (Deno as unknown as { internal: symbol }).internal
    ]?.core;
    const Variable = core?.AsyncVariable as
      | (new () => { enter(v: unknown): unknown; get(): unknown })
      | undefined;
    const restore = core?.setAsyncContext as ((c: unknown) => void) | undefined;
    if (typeof Variable !== "function" || typeof restore !== "function") return undefined;
    const variable = new Variable();
    if (typeof variable.enter !== "function" || typeof variable.get !== "function") {
      return undefined;
    }
    return {
      run<R>(id: number, fn: () => R): R {
        const before = variable.enter(id);
        try {
          return fn();
        } finally {
          restore(before);
        }
      },
      getStore: () => variable.get() as number | undefined,
    };
  } catch {
    return undefined;
  }
}

/**
 * Load what a first call needs (AsyncLocalStorage, where Deno's own async
 * variable is missing) now: a sandbox started ahead of a call
 * (./prestart.ts) does it while the host works, not when the call arrives.
 */
export function warmCalls(): void {
  if (_als) return;
  _alsLoading ??= import("node:async_hooks").then(({ AsyncLocalStorage }) => {
    _als = new AsyncLocalStorage<number>();
  });
}

/** Run `fn` as call `id`, with the call's id in the async context. */
async function _asCall<R>(id: number, fn: () => Promise<R>): Promise<R> {
  if (!_als) {
    warmCalls();
    await _alsLoading;
  }
  return await _als!.run(id, fn);
}

function _message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// Tool output becomes the log of the call that printed it.
const _MAX_LOG = 65_536;
const _format = (args: unknown[]) => {
  const text = args.map((a) => typeof a === "string" ? a : Deno.inspect(a)).join(" ");
  return text.length > _MAX_LOG ? `${text.slice(0, _MAX_LOG)}…[log line truncated]` : text;
};

// Deno.stdout/stderr writes become the call's log too, and Deno.stdin is
// closed to tool code: a worker (or the child) shares the host's stdio, which carries the
// MCP protocol under `corral mcp`. (This stops accidents and the obvious
// APIs; it is not a boundary against hostile code: node:process or fd-level
// writes still reach the host's stdout. Untrusted code runs in process
// isolation, whose stdout is framed with a token it cannot know.)
const _decoder = new TextDecoder();
const _logBytes = (p: Uint8Array): number => {
  const text = _decoder.decode(p).replace(/\n$/, "");
  _post({ type: "log", id: _current(), text: text.slice(0, _MAX_LOG) });
  return p.length;
};
const _sink = () => {
  // Made when asked: a stream is Deno's web streams, which a sandbox loads only if a tool uses them.
  let writable: WritableStream<Uint8Array> | undefined;
  return Object.freeze({
    write: (p: Uint8Array) => Promise.resolve(_logBytes(p)),
    writeSync: _logBytes,
    get writable(): WritableStream<Uint8Array> {
      return writable ??= new WritableStream<Uint8Array>({ write: (c) => void _logBytes(c) });
    },
    isTerminal: () => false,
    close: () => {},
  });
};
const _noStdin = () => {
  throw new Error("stdin is not available to tool code in a corral sandbox");
};
const _stdin = Object.freeze({
  read: () => Promise.reject(new Error("stdin is not available to tool code in a corral sandbox")),
  readSync: _noStdin,
  get readable(): ReadableStream<Uint8Array> {
    return _noStdin();
  },
  setRaw: _noStdin,
  isTerminal: () => false,
  close: () => {},
});

interface _Loaded {
  meta: ModuleMeta;
  tools: Map<string, ToolDefinition>;
  /** The tools' JSON Schemas are in `meta`. */
  described?: boolean;
}
const _modules = new Map<string, Promise<_Loaded>>();
const _running = new Map<number, AbortController>();
/** The environment of calls, as last sent by the host. */
let _env: SandboxEnv | undefined;

let _configured: SandboxEnv | undefined;

async function _load(module: string, env: SandboxEnv, describe = false): Promise<_Loaded> {
  // Processes that tools start get the host's allowlisted values and the jail.
  if (_configured !== env) {
    _configured = env;
    configureSubprocesses({ vars: env.vars, grant: env.grant, home: env.home, proxy: env.proxy });
    configureNetGuard({ egress: env.proxy !== undefined });
  }
  let p = _modules.get(module);
  if (!p) {
    p = _loadModule(module, env, describe);
    _modules.set(module, p);
  }
  const loaded = await p;
  if (describe && !loaded.described) {
    // Loaded by a call first: add the schemas now.
    const { inputJsonSchema } = await import("../tool/input_schema.ts");
    for (const t of loaded.meta.tools) {
      t.inputSchema = inputJsonSchema(loaded.tools.get(t.name)!.input);
    }
    loaded.described = true;
  }
  return loaded;
}

async function _loadModule(
  module: string,
  env: SandboxEnv,
  describe: boolean,
): Promise<_Loaded> {
  const meta: ModuleMeta = { module, tools: [], problems: [] };
  const tools = new Map<string, ToolDefinition>();
  let ns: Record<string, unknown>;
  try {
    ns = await import(module.startsWith("/") ? `file://${module}` : module);
  } catch (err) {
    const name = err instanceof Error ? err.name : "";
    meta.error = `${name === "NotCapable" ? "permission denied at import" : "import failed"}: ${
      _message(err)
    }`;
    return { meta, tools };
  }
  try {
    if (typeof ns.TOOL_SETUP === "function") await ns.TOOL_SETUP(env.config ?? {});
    if (typeof ns.is_configured === "function" && (await ns.is_configured()) === false) {
      meta.error = "not configured (is_configured() returned false)";
      meta.notConfigured = true;
      return { meta, tools };
    }
  } catch (err) {
    meta.error = `${
      typeof ns.TOOL_SETUP === "function" ? "TOOL_SETUP/is_configured" : "is_configured"
    } threw: ${_message(err)}`;
    return { meta, tools };
  }
  const collected = await collectTools(ns);
  meta.problems.push(...collected.problems);
  // JSON Schemas are only needed to describe tools (discovery), not to run
  // them: converting is left to a "load" request, keeping calls light.
  const inputJsonSchema = describe
    ? (await import("../tool/input_schema.ts")).inputJsonSchema
    : undefined;
  for (const def of collected.tools) {
    try {
      const inputSchema = inputJsonSchema ? inputJsonSchema(def.input) : {};
      const load = await def.shouldLoad();
      meta.tools.push({
        name: def.name,
        description: def.description,
        permissions: def.permissions,
        confirm: def.confirm,
        ...(def.confirmWhen ? { confirmWhen: def.confirmWhen } : {}),
        ...(def.commands ? { commands: def.commands } : {}),
        ...(def.taskSupport ? { taskSupport: def.taskSupport } : {}),
        ...(def.taskAfterInput ? { taskAfterInput: true } : {}),
        style: def.style,
        inputSchema,
        load,
      });
      tools.set(def.name, def);
    } catch (err) {
      meta.problems.push(`Tool "${def.name}": ${_message(err)}`);
    }
  }
  if (meta.tools.length === 0 && meta.problems.length === 0) {
    meta.error =
      "exports no tools (expected TOOL_CONFIGS, TOOL_CONFIG, @tool classes or a default plugin with tools()); " +
      `a valid export looks like: ${VALID_EXPORT_EXAMPLE}`;
  }
  return { meta, tools, described: describe };
}

const _asks = new Map<
  number,
  { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void }
>();
let _nextAsk = 1;
const _MAX_ASK_BYTES = 256 * 1024;

/**
 * Ask the client of call `id` (through the host); only on behalf of a
 * running call. A context kept past its call's end (or its cancellation)
 * fails here, and the host, told of it, refuses and audits it too.
 */
function _ask(id: number, kind: AskKind, params: Record<string, unknown>) {
  if (!_running.has(id) || _running.get(id)!.signal.aborted) {
    _post({ type: "ask", id, askId: 0, kind, params: {} });
    return Promise.reject(
      new Error(`the call has ended: a ${kind} request is only possible while its own call runs`),
    );
  }
  let size: number;
  try {
    size = JSON.stringify(params ?? {}).length;
  } catch (err) {
    return Promise.reject(new TypeError(`${kind} request cannot be sent: ${_message(err)}`));
  }
  if (size > _MAX_ASK_BYTES) {
    return Promise.reject(new RangeError(`${kind} request too large (${size} bytes)`));
  }
  const askId = _nextAsk++;
  return new Promise<Record<string, unknown>>((resolve, reject) => {
    _asks.set(askId, { resolve, reject });
    _post({ type: "ask", id, askId, kind, params: params ?? {} });
  });
}

/** `params` with the tool's name for its question (protocol.ts ASK_KEY_META) in `_meta`. */
function _keyed(params: Record<string, unknown>, key: unknown): Record<string, unknown> {
  if (typeof key !== "string" || !params || typeof params !== "object") return params;
  const meta = params._meta && typeof params._meta === "object" ? params._meta : {};
  return { ...params, _meta: { ...meta, [ASK_KEY_META]: key } };
}

async function _call(msg: Extract<HostMessage, { type: "call" }>): Promise<void> {
  const controller = new AbortController();
  _running.set(msg.id, controller);
  try {
    if (msg.env) _env = msg.env;
    const env = _env;
    if (!env) throw new Error("no environment from the host");
    const loaded = await _load(msg.module, env);
    const def = loaded.tools.get(msg.tool);
    if (!def) {
      const why = loaded.meta.error ?? `module does not export it`;
      const fault = { outcome: "error", reason: "load" } as const;
      _post({ type: "result", id: msg.id, result: failure(msg.tool, why), fault });
      return;
    }
    const meta = loaded.meta.tools.find((t) => t.name === msg.tool)!;
    if (!meta.load.load) {
      const fault = { outcome: "denied", reason: "not_loaded" } as const;
      _post({ type: "result", id: msg.id, result: failure(msg.tool, meta.load.reason), fault });
      return;
    }
    const result = await _asCall(msg.id, () =>
      invokeTool(def, msg.args, {
        signal: controller.signal,
        workspace: env.workspace,
        grant: env.grant,
        ...(env.maxReadBytes ? { maxReadBytes: env.maxReadBytes } : {}),
        report: (kind, message, options) =>
          _post({
            type: "report",
            id: msg.id,
            kind,
            message: String(message).slice(0, _MAX_LOG),
            options,
          }),
        sample: (params, o) => _ask(msg.id, "sample", _keyed(params, o?.key)),
        elicit: (params, o) => _ask(msg.id, "elicit", _keyed(params, o?.key)),
        roots: (o) => _ask(msg.id, "roots", _keyed({}, o?.key)),
      }));
    const fault = faultOf(result);
    _post({
      type: "result",
      id: msg.id,
      result: capResult(result, env.maxOutputBytes ?? 1e6),
      ...(fault ? { fault } : {}),
    });
  } catch (err) {
    _post({
      type: "result",
      id: msg.id,
      result: failure(msg.tool, _message(err)),
      fault: { outcome: "error", reason: "internal" },
    });
  } finally {
    _running.delete(msg.id);
  }
}

/**
 * Take over this realm for the sandbox, and return the handler of host
 * messages. `post` is the one channel to the host; call this before any
 * tool code exists, and only once.
 *
 * @example
 * ```ts ignore
 * import { runSandbox } from "./sandbox_runtime.ts";
 * const onHost = runSandbox((msg) => channel.send(msg));
 * channel.onmessage = (msg) => onHost(msg);
 * ```
 */
export function runSandbox(
  post: (msg: SandboxMessage) => void,
): (msg: HostMessage) => Promise<void> {
  if (_started) throw new Error("the sandbox runtime is already running in this realm");
  _started = true;
  _post = post;
  // Containment: tool code must not be able to end its own sandbox.
  Object.defineProperty(Deno, "exit", {
    value: (code?: number) => {
      throw new Error(`Deno.exit(${code ?? ""}) is not allowed inside a corral sandbox`);
    },
    writable: false,
    configurable: false,
  });
  globalThis.addEventListener("unhandledrejection", (e) => {
    e.preventDefault();
    _post({
      type: "log",
      id: _current(),
      text: `unhandled rejection: ${_message(e.reason)}`,
    });
  });
  globalThis.addEventListener("error", (e) => {
    e.preventDefault();
    _post({ type: "log", id: _current(), text: `uncaught error: ${e.message}` });
  });
  for (const level of ["log", "info", "debug", "warn", "error"] as const) {
    console[level] = (...args: unknown[]) =>
      _post({ type: "log", id: _current(), text: _format(args) });
  }
  for (
    const [key, value] of [["stdout", _sink()], ["stderr", _sink()], ["stdin", _stdin]] as const
  ) {
    try {
      Object.defineProperty(Deno, key, { value, writable: false, configurable: false });
    } catch { /* already locked */ }
  }
  return _onHost;
}

async function _onHost(msg: HostMessage): Promise<void> {
  switch (msg.type) {
    case "ping":
      _post({ type: "pong", id: msg.id });
      break;
    case "cancel":
      _running.get(msg.id)?.abort(new Error("cancelled"));
      break;
    case "answer": {
      const waiting = _asks.get(msg.askId);
      _asks.delete(msg.askId);
      if (msg.error !== undefined) waiting?.reject(new Error(msg.error));
      else waiting?.resolve((msg.result ?? {}) as Record<string, unknown>);
      break;
    }
    case "load": {
      const modules: ModuleMeta[] = [];
      for (const m of msg.modules) modules.push((await _load(m, msg.env, true)).meta);
      _post({ type: "loaded", id: msg.id, modules });
      break;
    }
    case "call":
      await _call(msg);
      break;
  }
}
