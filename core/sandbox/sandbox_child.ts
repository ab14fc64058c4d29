/**
 * Entry point of a process sandbox: a child `deno run` whose flags are the
 * grant. It reads a secret frame token from the first line of stdin (before
 * any tool code exists), then runs the sandbox runtime
 * (./sandbox_runtime.ts) in its own realm and relays messages: stdin lines
 * → the runtime, the runtime's messages → framed stdout lines. Tool code
 * shares stdout but never learns the token, so it cannot forge a protocol
 * line: the token and the built-ins that write a framed line are held in a
 * closure taken before any tool code is imported.
 *
 * Before any tool code exists, the child drops with
 * `Deno.permissions.revoke` every permission kind the grant does not use
 * (env, sys, ffi, import always; write, run, net when empty). Under
 * `deno run` its flags already are the grant. A compiled corral binary
 * re-runs itself as `corral __sandbox-child`, with the permissions fixed at
 * compile time: there revoking takes the broad grant away, and since Deno
 * can only revoke whole kinds or single paths, the tool code runs in a
 * worker narrowed to the exact lists. The first frame, `ready`, says what
 * the process still holds (`held`).
 *
 * @module
 */
import { bridgeEgress } from "../guard/mod.ts";
import type { ToolResult } from "../tool/mod.ts";
import {
  FRAME_MARK,
  type HostMessage,
  ISOLATED_WORKERS,
  type ModuleMeta,
  type SandboxMessage,
} from "./protocol.ts";

interface _Init {
  read: string[];
  write: string[];
  run: string[];
  net: string[];
  /** Hosts remote modules may be imported from (from the cache only). */
  import?: string[];
  /** The egress proxy's socket: bridge 127.0.0.1:3128 to it (see core/egress/egress.ts). */
  egress?: string;
  /** Built-in tool modules to load now, before a call asks (a sandbox started ahead). */
  preload?: string[];
}

const _encoder = new TextEncoder();

/**
 * The lines of stdin. One buffer is read into again and again: a stream
 * would allocate (and zero) a fresh 64 KiB chunk for every read, which is
 * most of a small call's cost.
 */
async function* _lines(read: (p: Uint8Array) => Promise<number | null>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const chunk = new Uint8Array(65_536);
  let buf = "";
  for (;;) {
    const n = await read(chunk);
    if (n === null) break;
    buf += decoder.decode(chunk.subarray(0, n), { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, nl);
      buf = buf.slice(nl + 1);
    }
  }
  if (buf) yield buf;
}

const _KINDS = ["read", "write", "run", "net", "env", "sys", "ffi", "import"] as const;

/** Revoke every kind the grant does not use; return the state of each kind. */
function _drop(init: _Init): Record<string, string> {
  const keep = new Set<string>(["read"]);
  // The egress bridge connects to a unix socket: that needs write (of the socket only).
  if (init.write.length || init.egress) keep.add("write");
  if (init.run.length) keep.add("run");
  if (init.net.length) keep.add("net");
  if (init.import?.length) keep.add("import");
  const held: Record<string, string> = {};
  for (const name of _KINDS) {
    const desc = { name } as Deno.PermissionDescriptor;
    try {
      // Synchronous: no promise and no turn of the event loop for each kind.
      if (!keep.has(name)) Deno.permissions.revokeSync(desc);
      held[name] = Deno.permissions.querySync(desc).state;
    } catch (err) {
      held[name] = `unknown: ${(err as Error).message}`;
    }
  }
  return held;
}

/**
 * Run the sandbox child on this process's stdin/stdout; never returns (the
 * process exits when the host closes stdin). By default the tool code runs
 * in this realm, whose flags are the grant; `worker: true` (a compiled
 * binary, whose flags cannot be narrowed to lists) runs it in a worker
 * holding the exact lists.
 *
 * @example
 * ```ts ignore
 * import { runSandboxChild } from "./sandbox_child.ts";
 * if (Deno.args[0] === "__sandbox-child") await runSandboxChild({ worker: true });
 * ```
 */
export async function runSandboxChild(options: { worker?: boolean } = {}): Promise<void> {
  // corral's runtime (no tool code in it) loads while the host sends the token: a sandbox
  // started ahead (./prestart.ts) is ready as soon as the host adopts it.
  const runtime = options.worker ? undefined : import("./sandbox_runtime.ts");
  runtime?.catch(() => {});
  const lines = _lines(Deno.stdin.read.bind(Deno.stdin));
  const token = (await lines.next()).value as string;
  const init = JSON.parse((await lines.next()).value as string) as _Init;
  // The way out of the namespace, before any tool code exists: a TCP port on
  // the namespace's own loopback, relayed to the host's egress proxy.
  if (init.egress) bridgeEgress(init.egress);
  const held = _drop(init);
  if (options.worker) return await _viaWorker(lines, token, init, held);
  // The tool code will share this realm: keep what writes a protocol line
  // (and the token) in this closure, with the built-ins it needs taken now,
  // before any tool code exists and can replace them.
  // Nothing reached through a prototype, a getter or a species at write time.
  const apply = Reflect.apply;
  const encode = TextEncoder.prototype.encode;
  const typed = Object.getPrototypeOf(Uint8Array.prototype);
  const byteLength = Object.getOwnPropertyDescriptor(typed, "byteLength")!.get!;
  const bufferOf = Object.getOwnPropertyDescriptor(typed, "buffer")!.get!;
  const offsetOf = Object.getOwnPropertyDescriptor(typed, "byteOffset")!.get!;
  const U8 = Uint8Array;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const exit = Deno.exit;
  const writeSync = Deno.stdout.writeSync.bind(Deno.stdout);
  const encoder = new TextEncoder();
  const prefix = FRAME_MARK + token;
  const out = (msg: SandboxMessage) => {
    const bytes: Uint8Array = apply(encode, encoder, [prefix + stringify(msg) + "\n"]);
    const size: number = apply(byteLength, bytes, []);
    let done = writeSync(bytes);
    if (done >= size) return;
    // No destructuring: an array iterator is tool code's to replace.
    const buffer: ArrayBuffer = apply(bufferOf, bytes, []);
    const offset: number = apply(offsetOf, bytes, []);
    while (done < size) done += writeSync(new U8(buffer, offset + done, size - done));
  };
  const { runSandbox, warmCalls } = await runtime!;
  const onHost = runSandbox(out);
  for (const key of ["close"]) {
    try {
      Object.defineProperty(globalThis, key, {
        value: () => {
          throw new Error(`${key} is not available to tool code in a corral sandbox`);
        },
        writable: false,
        configurable: false,
      });
    } catch { /* already locked */ }
  }
  const isolated = _isolatedLoads(init, out);
  out({ type: "ready", held });
  // A sandbox started ahead loads the built-in toolset's modules while the host works (the
  // call imports the same module record; a failure is reported by the call that needs it).
  if (init.preload?.length) warmCalls();
  for (const m of init.preload ?? []) import(`file://${m}`).catch(() => {});
  for await (const line of lines) {
    if (!line) continue;
    let msg: HostMessage;
    try {
      msg = parse(line);
    } catch {
      out({ type: "log", text: "sandbox: dropped a malformed host message" });
      continue;
    }
    // Loads to isolate (discovery of several plugins): each in a worker of its own.
    if (msg.type === "loads") {
      for (const load of msg.loads) if (load?.isolate) void isolated(load);
    } else if (msg.type === "load" && msg.isolate) void isolated(msg);
    else void onHost(msg);
  }
  // The host closed stdin: end the sandbox.
  exit(0);
}

/** A sandbox worker holding `read` and the grant's other lists; env, ffi and sys never. */
function _worker(init: _Init, read: string[]): Worker {
  const list = (l: string[]) => l.includes("*") ? true : l.length ? l : false;
  return new Worker(new URL("./sandbox_worker.ts", import.meta.url), {
    type: "module",
    deno: {
      permissions: {
        read: list(read),
        write: list(init.write),
        run: list(init.run),
        net: list(init.net),
        env: false,
        ffi: false,
        sys: false,
        import: list(init.import ?? []),
      },
    },
  });
}

/**
 * Each isolated load in a worker of its own, holding the load's read paths
 * and the grant's other lists; at most {@link ISOLATED_WORKERS} at once. The
 * worker ends when it has answered, or when its import outlasts its limit
 * (`isolate.timeoutMs`, from the worker's start): then the load is answered
 * as timed out and the next one starts (a busy loop may keep its thread).
 */
function _isolatedLoads(
  init: _Init,
  out: (msg: SandboxMessage) => void,
): (msg: Extract<HostMessage, { type: "load" }>) => Promise<void> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async (msg) => {
    if (running >= ISOLATED_WORKERS) await new Promise<void>((r) => waiting.push(r));
    running++;
    const worker = _worker(init, msg.isolate!.read);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await new Promise<void>((resolve) => {
        const limit = msg.isolate!.timeoutMs;
        if (limit) {
          timer = setTimeout(() => {
            worker.onmessage = worker.onerror = null;
            const error = `its import timed out after ${limit} ms`;
            out({ type: "result", id: msg.id, result: { success: false, error } });
            resolve();
          }, limit);
        }
        // The worker runs one plugin's code: it speaks for this load only. Whatever it
        // sends is relayed under this load's id (a log, then one answer); the rest is dropped.
        let ready = false;
        worker.onmessage = (e: MessageEvent<SandboxMessage>) => {
          const m = e.data as Partial<Record<string, unknown>>;
          if (!ready) {
            if (m?.type !== "ready") return;
            ready = true;
            worker.postMessage({ type: "load", id: msg.id, modules: msg.modules, env: msg.env });
            return;
          }
          if (m?.type === "log") {
            out({ type: "log", id: msg.id, text: String(m.text).slice(0, 65_536) });
          } else if (m?.type === "loaded") {
            out({ type: "loaded", id: msg.id, modules: m.modules as ModuleMeta[] });
            resolve();
          } else if (m?.type === "result") {
            out({ type: "result", id: msg.id, result: m.result as ToolResult });
            resolve();
          }
        };
        worker.onerror = (e) => {
          e.preventDefault();
          out({
            type: "result",
            id: msg.id,
            result: { success: false, error: `its sandbox worker crashed: ${e.message}` },
          });
          resolve();
        };
      });
    } finally {
      clearTimeout(timer);
      worker.terminate();
      running--;
      waiting.shift()?.();
    }
  };
}

/** The tool code in a worker holding the exact lists (a compiled binary's child). */
async function _viaWorker(
  lines: AsyncGenerator<string>,
  token: string,
  init: _Init,
  held: Record<string, string>,
): Promise<void> {
  const worker = _worker(init, init.read);
  const out = (msg: SandboxMessage) =>
    Deno.stdout.writeSync(_encoder.encode(`${FRAME_MARK}${token}${JSON.stringify(msg)}\n`));
  worker.onmessage = (e: MessageEvent<SandboxMessage>) =>
    out(e.data.type === "ready" ? { ...e.data, held } : e.data);
  worker.onerror = (e) => {
    // The worker handles its own errors; one that reaches here means it is dead.
    e.preventDefault();
    console.error(`error: sandbox worker failed: ${e.message}`);
    Deno.exit(70);
  };
  for await (const line of lines) {
    if (!line) continue;
    try {
      worker.postMessage(JSON.parse(line));
    } catch {
      out({ type: "log", text: "sandbox: dropped a malformed host message" });
    }
  }
  // The host closed stdin: end the sandbox.
  worker.terminate();
  Deno.exit(0);
}

if (import.meta.main) await runSandboxChild();
