/**
 * Process isolation: the sandbox is a child `deno run` whose permission
 * flags are the grant, run `--cached-only --frozen` with a V8 heap limit,
 * with a clean environment. Inside it, a permissioned worker runs the tool
 * code (./sandbox_child.ts). Messages travel as lines on stdin/stdout;
 * lines from the child count only when they carry the random token sent
 * first, before any tool code exists, so tool output cannot forge them.
 *
 * @module
 */
import { basename, join } from "node:path";
import { configDir, INSTALL_DIR } from "../config/install_dir.ts";
import { type LimitedChild, REFUSED_EXIT, REFUSED_MARK, spawnLimited } from "../guard/limits.ts";
import {
  EGRESS_LISTEN,
  EGRESS_SOCKET_IN_NAMESPACE,
  EGRESS_URL,
  proxyVars,
  startEgress,
} from "../guard/egress.ts";
import { NAMESPACE_HOME, namespaceArgs, namespacePath } from "../guard/namespace.ts";
import { plantedMounts } from "../guard/planted_mounts.ts";
import { sealedNamespace } from "./sealed_runtime.ts";
import { adoptPrestarted, type LaunchPlan, noteLaunch } from "./prestart.ts";
import { FRAME_MARK, type HostMessage, type SandboxEnv, type SandboxMessage } from "./protocol.ts";
import {
  CHILD_ENTRY,
  type Transport,
  type TransportHooks,
  type TransportSpec,
} from "./transport.ts";

const _CONFIG = join(INSTALL_DIR, "deno.json");

/**
 * Whether this host is a compiled corral binary (`deno compile`): then
 * `Deno.execPath()` is corral itself, not `deno`, and a process sandbox is
 * `corral __sandbox-child`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { selfHosted } from "./process_transport.ts";
 * assert.ok(selfHosted() === false); // under `deno run` / `deno test`
 * ```
 */
export function selfHosted(): boolean {
  return !/^deno(\.exe)?$/.test(basename(Deno.execPath()));
}

/** Start a child process sandbox for `spec`. */
export function startProcess(spec: TransportSpec, hooks: TransportHooks): Transport {
  const { grant: g, policy: p, read } = spec;
  const flag = (name: string, l: string[]) =>
    l.includes("*")
      ? [`--allow-${name}`]
      : l.length
      ? [`--allow-${name}=${[...new Set(l)].join(",")}`]
      : [];
  const run = g.run;
  // In a namespace the runtime and pid 1 are execute-only copies: not
  // dumpable, so no subprocess reads their memory or their pipes
  // (./sealed_runtime.ts). Made first, so that a failure leaves nothing behind.
  const sealed = spec.namespace && !selfHosted()
    ? sealedNamespace(spec.namespace.runtime.exec, run.length > 0)
    : { bwrap: [], command: [] };
  // A namespaced sandbox that holds `n` reaches the network only through the
  // host's egress proxy, bridged into the namespace by the child.
  const egress = spec.namespace && g.net.length
    ? startEgress(join(configDir(), "run"), {
      allowed: g.net,
      onConnection: spec.onConnection,
    })
    : undefined;
  const sock = egress ? [EGRESS_SOCKET_IN_NAMESPACE] : [];
  const bridge = egress
    ? [`${EGRESS_LISTEN.hostname}:${EGRESS_LISTEN.port}`, `unix:${EGRESS_SOCKET_IN_NAMESPACE}`]
    : [];
  // A compiled corral binary re-runs itself as the child (its flags are fixed
  // at compile time; the child revokes down to the grant, see sandbox_child.ts).
  const compiled = selfHosted();
  const args = compiled ? ["__sandbox-child"] : [
    "run",
    "--no-prompt",
    "--cached-only",
    "--frozen",
    "--no-check",
    `--config=${_CONFIG}`,
    "--unstable-worker-options",
    ...flag("read", [...read, ...sock]),
    ...flag("write", [...g.write, ...sock]),
    ...flag("run", run),
    ...flag("net", [...g.net, ...bridge]),
    ...flag("import", spec.imports),
    `--v8-flags=--max-old-space-size=${p.memory_mb}`,
    CHILD_ENTRY,
  ];
  let command = Deno.execPath();
  let commandArgs = args;
  let env = _childEnv();
  const ns = spec.namespace;
  // Files other programs run (git hooks and config, editor settings, rc
  // files) read-only inside the write grant; missing ones held by placeholders.
  let planted: ReturnType<typeof plantedMounts> | undefined;
  let insidePath: ((path: string) => string) | undefined;
  if (ns) {
    try {
      planted = plantedMounts({
        write: g.write,
        workspace: spec.workspace,
        protect: ns.protect,
        hide: ns.hide,
        ...(g.planted ? { entries: g.planted } : {}),
        ...(_home() ? { home: _home() } : {}),
      });
    } catch (err) {
      egress?.close();
      // A protection that cannot be had (a placeholder, a folder swapped meanwhile): refused.
      throw new Error(`"${spec.label}" not started: ${(err as Error).message}; refusing`);
    }
    // The mounts are the grant: read-only reads, writable writes, the code
    // read-only, the trust base masked, and nothing else.
    command = ns.bwrap;
    commandArgs = [
      ...namespaceArgs({
        bwrap: ns.bwrap,
        runtime: ns.runtime,
        read: g.read,
        code: spec.code ?? [],
        write: g.write,
        protect: planted!.protect,
        hide: planted!.hide,
        system: run.length > 0,
        net: false,
        netFiles: g.net.length > 0,
        ...(egress ? { egressDir: egress.dir } : {}),
        ...(ns.pinned ? { pinned: ns.pinned } : {}),
        cwd: spec.workspace,
      }),
      ...sealed.bwrap,
      "--",
      ...sealed.command,
      ns.runtime.exec,
      ...args,
    ];
    env = { ...env, HOME: NAMESPACE_HOME, DENO_DIR: ns.runtime.denoDir };
    // No host folder on PATH that the namespace does not bind.
    const bound = { read: g.read, write: g.write, system: run.length > 0 };
    insidePath = (path) => namespacePath(path, bound);
    env.PATH = insidePath(env.PATH ?? "");
    if (egress) env = { ...env, ...proxyVars(EGRESS_URL) };
  }
  if (compiled) env.DENO_V8_FLAGS = `--max-old-space-size=${p.memory_mb}`;
  // The child's first line after its token: what it holds (it drops the rest).
  const init = JSON.stringify({
    read,
    write: g.write,
    run,
    net: g.net,
    import: spec.imports,
    ...(egress ? { egress: EGRESS_SOCKET_IN_NAMESPACE } : {}),
  });
  // Processes and memory of the whole sandbox, subprocesses included: the
  // V8 heap limit plus room for the runtime and the processes it starts.
  let started: LimitedChild;
  let ahead: ReturnType<typeof adoptPrestarted>;
  try {
    // In the namespace, the launcher binds what it opened and checked (../guard/limits.ts).
    // No descriptor the host inherited (one its parent left open) reaches it either. The
    // launcher stands nowhere a tool could swap (bwrap sets the cwd inside).
    const plan: LaunchPlan = {
      init,
      spec: { pids: p.max_processes, memoryMb: p.memory_mb + 256 },
      allowRlimit: p.limits === "rlimit",
      command,
      args: commandArgs,
      openBinds: ns !== undefined,
      cwd: ns ? "/" : spec.workspace,
      env,
    };
    // A sandbox the CLI started ahead with exactly this plan (./prestart.ts), else a new one.
    ahead = adoptPrestarted(plan);
    started = ahead?.started ??
      spawnLimited(plan.spec, plan.allowRlimit, command, commandArgs, plan);
    if (!g.write.length && !egress) noteLaunch(plan, spec);
  } catch (err) {
    egress?.close();
    planted?.release();
    if (err instanceof Deno.errors.NotCapable) {
      throw new Error(
        `the host may not start sandbox processes (${(err as Error).message}): start corral ` +
          `with --allow-run, or trust the toolset with "isolation": "worker"`,
      );
    }
    throw err;
  }
  const { child, limits } = started;
  // A sandbox started ahead already holds its token and first line (./prestart.ts).
  const token = ahead?.token ?? crypto.randomUUID().replaceAll("-", "");
  const writer = child.stdin.getWriter();
  const enc = new TextEncoder();
  let dead = false;
  const write = (text: string) => {
    if (dead) return;
    writer.write(enc.encode(text)).catch(() => {});
  };
  let ended = () => {};
  const t: Transport = {
    pid: child.pid,
    ended: new Promise<void>((r) => ended = r),
    send: (msg) => write(JSON.stringify(insidePath ? _withPath(msg, insidePath) : msg) + "\n"),
    kill: () => {
      if (dead) return;
      dead = true;
      writer.close().catch(() => {});
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      // Whatever the sandbox started dies with it: its CPU is reclaimed.
      void limits.release();
      egress?.close();
    },
  };
  if (!ahead) write(`${token}\n${init}\n`);
  const mark = FRAME_MARK + token;
  // The sandbox caps results itself; this bounds what a hostile one can send.
  const limit = p.max_output_bytes + 1_048_576;
  let stderrTail = "";
  _readLines(child.stdout, limit, (line) => {
    // The last mark on the line; a frame alone on its line (the usual case) found without
    // scanning it backwards.
    const at = line.startsWith(mark) && line.indexOf(mark, 1) < 0 ? 0 : line.lastIndexOf(mark);
    if (at < 0) {
      hooks.onLog(line);
      return;
    }
    if (at > 0) hooks.onLog(line.slice(0, at));
    try {
      hooks.onMessage(JSON.parse(line.slice(at + mark.length)) as SandboxMessage);
    } catch {
      hooks.onLog(`dropped a malformed message from sandbox ${spec.label}`);
    }
  });
  const stderrDone = _readLines(child.stderr, 65_536, (line) => {
    stderrTail = (stderrTail + line + "\n").slice(-4096);
    hooks.onLog(line);
  });
  child.status.then(async (status) => {
    dead = true;
    // The launcher's refusal names the path: read it whole (nothing else holds stderr then).
    if (status.code === REFUSED_EXIT) await _within(stderrDone, 2000);
    egress?.close();
    const forked = (await limits.release()).hitProcessLimit;
    // Everything the sandbox started is gone: its placeholders may go too.
    planted?.release();
    ended();
    const oom = /out of memory|heap limit|allocation failed/i.test(stderrTail) ||
      status.code === 133 || status.signal === "SIGTRAP";
    const refused = status.code === REFUSED_EXIT ? _refusal(stderrTail) : undefined;
    const why = refused
      ? `"${spec.label}" not started: ${refused}; refusing`
      : forked
      ? `hit its process limit (${p.max_processes} processes and threads) and was stopped`
      : status.code === 97
      ? `could not set up or join its ${limits.kind} limits and was not started`
      : oom
      ? `ran out of memory (limit ${p.memory_mb} MB) and was restarted`
      : `exited unexpectedly (code ${status.code}${status.signal ? `, ${status.signal}` : ""})${
        _lastLine(stderrTail)
      }`;
    hooks.onExit(why);
  });
  return t;
}

/** The launcher's refusal (./../guard/limits.ts): which path is now what. */
function _refusal(stderr: string): string {
  const line = stderr.split("\n").find((l) => l.startsWith(REFUSED_MARK));
  const [expected, found] = (line ?? "").slice(REFUSED_MARK.length).split("\t");
  if (!line || !expected) return "a path it binds changed since the policy named it";
  return found?.startsWith("(")
    ? `the path ${expected} it binds is ${found.slice(1, -1)}`
    : `the path ${expected} it binds is now ${found} (a symlink, or renamed, since the policy ` +
      `named it)`;
}

function _within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p.then(() => {}),
    new Promise<void>((resolve) => timer = setTimeout(resolve, ms)),
  ]).finally(() => clearTimeout(timer));
}

/** A message with the PATH of its subprocesses as the namespace sees it. */
function _withPath(msg: HostMessage, inside: (path: string) => string): HostMessage {
  const fix = <T extends { env?: SandboxEnv }>(m: T): T =>
    m.env?.vars?.PATH === undefined
      ? m
      : { ...m, env: { ...m.env, vars: { ...m.env.vars, PATH: inside(m.env.vars.PATH) } } };
  if (msg.type === "loads") return { ...msg, loads: msg.loads.map(fix) };
  return msg.type === "call" || msg.type === "load" ? fix(msg) : msg;
}

function _lastLine(text: string): string {
  // deno-lint-ignore no-control-regex
  const lines = text.replace(/\x1b\[[0-9;]*m/g, "").split("\n").map((l) => l.trim()).filter(
    Boolean,
  );
  const line = lines.find((l) => /error/i.test(l)) ?? lines.at(-1);
  return line ? `: ${line.slice(0, 300)}` : "";
}

function _home(): string | undefined {
  try {
    return Deno.env.get("HOME") || undefined;
  } catch {
    return undefined;
  }
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
  // One buffer, read into again and again (a default reader allocates and
  // zeroes a fresh 64 KiB chunk per read: most of a small call's cost).
  const reader = stream.getReader({ mode: "byob" });
  let space = new Uint8Array(65_536);
  try {
    for (;;) {
      const { value, done } = await reader.read(space);
      if (done || !value) break;
      space = new Uint8Array(value.buffer);
      const chunk = value;
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
