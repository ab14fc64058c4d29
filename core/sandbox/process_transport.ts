/**
 * Process isolation: the sandbox is a child `deno run` whose permission
 * flags are the grant (./child_command.ts), in the namespace whose mounts
 * are the grant, with its write roots as layers of its own
 * (core/jail/namespace.ts, core/layers/), in limits of its own
 * (core/jail/limits.ts), reaching the network only through its egress
 * proxy (core/egress/egress.ts), with a clean environment. It speaks framed
 * lines on stdin/stdout (./_sandbox_wire.ts). Each step is a function here:
 * seal, egress, layers, mounts, spawn, and the clean-up when it ends.
 *
 * @module
 */
import { join } from "node:path";
import { configDir } from "../config/mod.ts";
import {
  EGRESS_LISTEN,
  EGRESS_SOCKET_IN_NAMESPACE,
  EGRESS_URL,
  hostTrustFile,
  proxyVars,
  type StartedEgress,
  startEgress,
  TRUST_IN_NAMESPACE,
  trustVars,
  writeTrust,
} from "../egress/mod.ts";
import {
  etcFiles,
  type LimitedChild,
  NAMESPACE_HOME,
  namespaceLayout,
  namespacePath,
  spawnLimited,
} from "../jail/mod.ts";
import { layerQuota, type SandboxLayers, type StartedLayers, startLayers } from "../layers/mod.ts";
import { childArgs, childEnv, selfHosted } from "./child_command.ts";
import { exitReason } from "./_exit_reason.ts";
import { adoptPrestarted, type LaunchPlan, noteLaunch } from "./prestart.ts";
import type { HostMessage, SandboxEnv } from "./protocol.ts";
import { sealedNamespace } from "./sealed_runtime.ts";
import { wireChild } from "./_sandbox_wire.ts";
import type { Transport, TransportHooks, TransportSpec } from "./_transport.ts";

export { selfHosted } from "./child_command.ts";

/** What the launch of one child is: its command line, environment and what it holds. */
interface _Launch {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** PATH of messages as the namespace sees it. */
  insidePath?: (path: string) => string;
  egress?: StartedEgress;
  /** The layer folders of its write roots (core/layers/). */
  folders?: StartedLayers;
  /** What settles them. */
  layers?: SandboxLayers;
}

/** Start a child process sandbox for `spec`. */
export function startProcess(spec: TransportSpec, hooks: TransportHooks): Transport {
  const launch = _prepare(spec);
  const hello = {
    read: spec.read,
    write: spec.grant.write,
    run: spec.grant.run,
    net: spec.grant.net,
    import: spec.imports,
    ...(launch.egress ? { egress: EGRESS_SOCKET_IN_NAMESPACE } : {}),
  };
  let started: LimitedChild & { token?: string };
  try {
    started = _spawn(spec, launch, JSON.stringify(hello));
  } catch (err) {
    _undo(launch);
    throw err;
  }
  const { child, limits } = started;
  const layers = launch.layers;
  layers?.watch(child.pid);
  const p = spec.policy;
  const t = wireChild(child, hooks, {
    label: spec.label,
    hello,
    // A sandbox started ahead already holds its token and hello (./prestart.ts).
    ...(started.token ? { sent: started.token } : {}),
    // The sandbox caps results itself; this bounds what a hostile one can send.
    lineLimit: p.max_output_bytes + 1_048_576,
    outgoing: launch.insidePath ? (m) => _withPath(m, launch.insidePath!) : undefined,
    kill: () => {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      // Whatever the sandbox started dies with it: its CPU is reclaimed.
      void limits.release();
      launch.egress?.close();
    },
    ended: async (status, stderrTail) => {
      launch.egress?.close();
      const forked = (await limits.release()).hitProcessLimit;
      // Everything the sandbox started is gone: what it wrote last is settled, its layers go.
      await _closeLayers(launch, hooks);
      return exitReason({
        label: spec.label,
        status,
        stderrTail,
        forked,
        limitKind: limits.kind,
        maxProcesses: p.max_processes,
        memoryMb: p.memory_mb,
      });
    },
  });
  if (layers) t.layers = layers;
  return t;
}

/** Seal, egress, layers and mounts: everything made before the child is spawned. */
function _prepare(spec: TransportSpec): _Launch {
  const ns = spec.namespace;
  // In a namespace the runtime and pid 1 are execute-only copies (./sealed_runtime.ts).
  // Made first, so that a failure leaves nothing behind.
  const sealed = ns && !selfHosted()
    ? sealedNamespace(ns.runtime.exec, spec.grant.run.length > 0)
    : undefined;
  // A namespaced sandbox that holds `n` reaches the network only through the host's egress
  // proxy, bridged into the namespace by the child.
  const egress = ns && spec.grant.net.length
    ? startEgress(_runDir(spec), {
      allowed: spec.grant.net,
      onConnection: spec.onConnection,
    })
    : undefined;
  const sock = egress ? [EGRESS_SOCKET_IN_NAMESPACE] : [];
  const bridge = egress
    ? [`${EGRESS_LISTEN.hostname}:${EGRESS_LISTEN.port}`, `unix:${EGRESS_SOCKET_IN_NAMESPACE}`]
    : [];
  const args = childArgs(spec, sock, bridge);
  if (!ns) return { command: Deno.execPath(), args, env: _env(spec, _hostTrust(childEnv())) };
  const launch: _Launch = { command: ns.bwrap, args: [], env: {}, egress };
  try {
    launch.folders = _layerFolders(spec);
    _mounts(spec, launch, args, sealed ?? { bwrap: [], command: [] });
  } catch (err) {
    _undo(launch);
    // A protection that cannot be had (its layers' folder, a path swapped meanwhile): refused.
    throw new Error(`"${spec.label}" not started: ${(err as Error).message}; refusing`);
  }
  return launch;
}

/** The write roots as layers of the sandbox's own (core/layers/). */
function _layerFolders(spec: TransportSpec): StartedLayers | undefined {
  const ns = spec.namespace!;
  return startLayers(spec.grant.write, spec.workspace, spec.grant.planted, {
    trust: ns.trust ?? ns.protect.map((path) => ({ path, what: "corral's trust base" })),
    grantPaths: ns.grantPaths,
  }, layerQuota(spec.policy));
}

/** The namespace's mounts (the grant, layered), its environment and its PATH. */
function _mounts(
  spec: TransportSpec,
  launch: _Launch,
  args: string[],
  sealed: { bwrap: string[]; command: string[] },
): void {
  const ns = spec.namespace!;
  const g = spec.grant;
  const layout = namespaceLayout({
    bwrap: ns.bwrap,
    runtime: ns.runtime,
    read: g.read,
    code: spec.code ?? [],
    write: g.write,
    protect: ns.protect,
    hide: ns.hide,
    ...(launch.folders ? { layers: launch.folders.map } : {}),
    system: g.run.length > 0,
    net: false,
    netFiles: g.net.length > 0,
    // corral's own passwd, group, hosts and resolv.conf: no account or name of the host's.
    ...(g.run.length || g.net.length ? { etc: etcFiles(_runDir(spec), []) } : {}),
    ...(launch.egress ? { egressDir: launch.egress.dir } : {}),
    ...(ns.seccomp ? { seccomp: ns.seccomp } : {}),
    cwd: spec.workspace,
  });
  if (launch.folders) launch.layers = launch.folders.open(layout.artifacts);
  launch.args = [
    ...layout.args,
    ...sealed.bwrap,
    "--",
    ...sealed.command,
    ns.runtime.exec,
    ...args,
  ];
  const env: Record<string, string> = {
    ...childEnv(),
    HOME: NAMESPACE_HOME,
    DENO_DIR: ns.runtime.denoDir,
    ...ns.runtime.env,
  };
  // No host folder on PATH that the namespace does not bind.
  const bound = { read: g.read, write: g.write, system: g.run.length > 0 };
  launch.insidePath = (path) => namespacePath(path, bound);
  env.PATH = launch.insidePath(env.PATH ?? "");
  // The operator's trust store, read-only beside the proxy's socket (core/egress/trust_store.ts).
  if (launch.egress && writeTrust(launch.egress.dir)) {
    Object.assign(env, trustVars(TRUST_IN_NAMESPACE));
  }
  launch.env = _env(spec, launch.egress ? { ...env, ...proxyVars(EGRESS_URL) } : env);
}

/** corral's run folder: the one fixed with the registry, else `<config dir>/run` now. */
function _runDir(spec: TransportSpec): string {
  return spec.namespace?.runDir ?? join(configDir(), "run");
}

/** Without the namespace: the operator's trust store for Deno's TLS (DENO_CERT), as a file. */
function _hostTrust(env: Record<string, string>): Record<string, string> {
  const file = hostTrustFile(join(configDir(), "run"));
  return file ? { ...env, DENO_CERT: file } : env;
}

/** The environment with the heap limit of a compiled binary's child. */
function _env(spec: TransportSpec, env: Record<string, string>): Record<string, string> {
  if (selfHosted()) env.DENO_V8_FLAGS = `--max-old-space-size=${spec.policy.memory_mb}`;
  return env;
}

/**
 * Spawn the child in limits of its own: processes and memory of the whole sandbox. A
 * sandbox the CLI started ahead with exactly this plan and `hello` is adopted instead
 * (./prestart.ts): it comes with the token it was given.
 */
function _spawn(
  spec: TransportSpec,
  launch: _Launch,
  hello: string,
): LimitedChild & { token?: string } {
  const p = spec.policy;
  const ns = spec.namespace !== undefined;
  try {
    // In the namespace, the launcher binds what it opened and checked (core/jail/launcher.ts).
    // No descriptor the host inherited reaches it either. It stands nowhere a tool could swap.
    const plan: LaunchPlan = {
      init: hello,
      spec: { pids: p.max_processes, memoryMb: p.memory_mb + 256 },
      allowRlimit: p.limits === "rlimit",
      command: launch.command,
      args: launch.args,
      openBinds: ns,
      cwd: ns ? "/" : spec.workspace,
      env: launch.env,
    };
    const ahead = adoptPrestarted(plan);
    if (!spec.grant.write.length && !launch.egress && !launch.folders) noteLaunch(plan, spec);
    if (ahead) return { ...ahead.started, token: ahead.token };
    return spawnLimited(plan.spec, plan.allowRlimit, plan.command, plan.args, plan);
  } catch (err) {
    if (err instanceof Deno.errors.NotCapable) {
      throw new Error(
        `the host may not start sandbox processes (${(err as Error).message}): start corral ` +
          `with --allow-run, or trust the toolset with "isolation": "worker"`,
      );
    }
    throw err;
  }
}

/** Give back what was made for a child that never ran. */
function _undo(launch: _Launch): void {
  launch.egress?.close();
  launch.layers?.retire();
  void launch.folders?.remove();
}

/** The child is gone: settle what it wrote last (reported apart), then remove its layers. */
async function _closeLayers(launch: _Launch, hooks: TransportHooks): Promise<void> {
  const layers = launch.layers;
  if (!layers) return;
  try {
    hooks.onChanges?.(await layers.close());
  } catch (err) {
    layers.retire();
    hooks.onLog(`its last changes could not be settled: ${(err as Error).message}`);
  }
  await launch.folders?.remove();
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
