/**
 * Starting a hosted server in the same sandbox a process sandbox gets: the
 * bwrap namespace whose mounts are its grant (core/jail/namespace.ts), the
 * cgroup limits (core/jail/limits.ts), the egress proxy when it holds `n`
 * (core/egress/egress.ts), and a scrubbed environment where secrets are
 * read from the host by name. An npm server runs under `deno run` whose
 * `--allow-*` flags are its grant, `--cached-only --frozen` against its own
 * lock; a PyPI or command server gets the namespace, limits and egress.
 * Its write roots are layers of its own (core/layers/), settled after each
 * call. Without bwrap it does not start (unless the policy says `"jail": "off"`).
 *
 * @module
 */
import { join } from "node:path";
import { configDir, type SandboxPolicy, type ServerEntry } from "../config/mod.ts";
import type { EgressRecord, InjectedSecret, StartedEgress } from "../egress/mod.ts";
import {
  etcFiles,
  type LimitedChild,
  namespaceLayout,
  runtimeFiles,
  type SeccompFiles,
  spawnLimited,
} from "../jail/mod.ts";
import {
  type ChangeReport,
  layerQuota,
  type SandboxLayers,
  type StartedLayers,
  startLayers,
} from "../layers/mod.ts";
import type { Grant } from "../tool/mod.ts";
import { installed, type InstallRecord } from "./install.ts";
import { serverCommand } from "./server_command.ts";
import { serverEgress } from "./server_egress.ts";
import { serverEnv } from "./_server_env.ts";
import { checkVenv } from "./_venv_integrity.ts";

/** What starting one server needs. */
export interface LaunchSpec {
  entry: ServerEntry;
  grant: Grant;
  policy: SandboxPolicy;
  workspace: string;
  /** The namespace: bwrap and the trust base to protect and hide; absent only with jail off. */
  namespace?: {
    bwrap: string;
    /** The jail's second wall, its compiled syscall filter; absent only as an opt-out. */
    seccomp?: SeccompFiles;
    protect: string[];
    hide: string[];
    trust?: readonly { path: string; what: string }[];
    grantPaths?: string[];
    /** corral's run folder, fixed with the registry (default: `<config dir>/run`, read now). */
    runDir?: string;
  };
  /** Each egress connection, allowed or refused. */
  onConnection?: (r: EgressRecord) => void;
  /** What it wrote outside any call, settled when it stopped (for the audit log). */
  onChanges?: (report: ChangeReport) => void;
  /** Where installs live (tests). */
  serversDir?: string;
}

/** A started server process. */
export interface Launched {
  child: Deno.ChildProcess;
  /** The secret values its environment holds (scrub them from everything it says). */
  secrets: string[];
  /** Its write layers (core/layers/): settled after each call. */
  layers?: SandboxLayers;
  /** Kill it and everything it started; release its limits and proxy. */
  kill(): void;
  /** Resolves with a reason when it has exited (and its last changes are settled). */
  exited: Promise<string>;
}

/** The command of a started server, and what was made for it. */
interface _Start {
  program: string;
  args: string[];
  env: Record<string, string>;
  egress?: StartedEgress;
  folders?: StartedLayers;
  layers?: SandboxLayers;
}

/** Start `spec.entry`; throws an Error saying what is missing (bwrap, an install, a secret). */
export async function launchServer(spec: LaunchSpec): Promise<Launched> {
  const { entry, policy: p } = spec;
  if (!spec.namespace && p.jail !== "off") {
    throw new Error(
      `needs the sandbox namespace, but no working bwrap was found: install bubblewrap ` +
        `(apt-get install bubblewrap), or opt out explicitly with "jail": "off" in ` +
        `${p.where} of ${p.file ?? "permissions.json"}`,
    );
  }
  const record = entry.kind === "command" ? undefined : installed(entry, spec.serversDir);
  if (typeof record === "string") throw new Error(record);
  // What runs is what was installed: every file of the venv, dependencies included.
  if (record?.kind === "pypi") {
    await checkVenv(
      record.dir,
      record.tree,
      `run \`corral servers install ${entry.name}\` to install it again`,
    );
  }
  const { env, secrets, injected } = serverEnv(entry, spec.workspace);
  if (injected.length && !spec.namespace) {
    throw new Error(
      `a secret injected at egress needs the sandbox namespace and its proxy; with "jail": ` +
        `"off" give the secret without "inject"`,
    );
  }
  const start = await _command(spec, record, env, injected);
  let started: LimitedChild;
  try {
    // In the namespace, the launcher binds what it opened and checked (core/jail/launcher.ts).
    started = spawnLimited(
      { pids: p.max_processes, memoryMb: p.memory_mb + 256 },
      p.limits === "rlimit",
      start.program,
      start.args,
      {
        openBinds: spec.namespace !== undefined,
        cwd: spec.namespace ? "/" : spec.workspace,
        env: start.env,
      },
    );
  } catch (err) {
    _undo(start);
    throw err;
  }
  start.layers?.watch(started.child.pid);
  return { ..._lifecycle(spec, start, started), secrets };
}

/** The server's command: its own, behind the egress bridge, inside the namespace. */
async function _command(
  spec: LaunchSpec,
  record: InstallRecord | undefined,
  env: Record<string, string>,
  injected: InjectedSecret[],
): Promise<_Start> {
  const g = spec.grant;
  const own = serverCommand(spec.entry, record, g, spec.policy, spec.workspace);
  if (own.path) env.PATH = [...own.path, env.PATH].join(":");
  if (own.denoDir) env.DENO_DIR = own.denoDir;
  const ns = spec.namespace;
  // Without the namespace (`"jail": "off"`) there is no proxy: the host's network, as opted out.
  if (!ns) return { program: own.command[0], args: own.command.slice(1), env };
  const rt = await runtimeFiles();
  const run = ns.runDir ?? join(configDir(), "run");
  if (injected.length && !g.net.length) {
    throw new Error(
      `the secret ${injected[0].name} is injected at egress, but ${spec.policy.where} has no ` +
        `net list: add its hosts to ${spec.policy.where}.net in permissions.json`,
    );
  }
  const out = g.net.length
    ? await serverEgress(g.net, spec.policy, spec.onConnection, injected, undefined, run)
    : undefined;
  // An npm server's own connections to its forwarders go straight to the proxy.
  const direct = out && spec.entry.kind === "npm" ? out.direct(own.command) : undefined;
  const cmd = out ? out.wrap(rt.exec, direct?.command ?? own.command) : own.command;
  if (out) Object.assign(env, out.env, direct?.env);
  const start: _Start = { program: ns.bwrap, args: [], env, egress: out?.egress };
  try {
    // The write roots are layers of the server's own (core/layers/).
    start.folders = startLayers(g.write, spec.workspace, g.planted, {
      trust: ns.trust ?? ns.protect.map((path) => ({ path, what: "corral's trust base" })),
      grantPaths: ns.grantPaths,
    }, layerQuota(spec.policy));
    const layout = namespaceLayout({
      bwrap: ns.bwrap,
      runtime: { ...rt, denoDir: own.denoDir ?? rt.denoDir },
      read: g.read,
      code: [...own.code, ...(out?.code ?? [])],
      write: g.write,
      protect: ns.protect,
      hide: ns.hide,
      ...(start.folders ? { layers: start.folders.map } : {}),
      system: own.system,
      net: false,
      netFiles: g.net.length > 0,
      // corral's own passwd, group, hosts (the forwarders' names) and resolv.conf.
      etc: out?.etc ?? etcFiles(run, []),
      ...(out ? { egressDir: out.egress.dir } : {}),
      ...(out?.netns ? { netns: out.netns } : {}),
      ...(ns.seccomp ? { seccomp: ns.seccomp } : {}),
      cwd: spec.workspace,
    });
    start.layers = start.folders?.open(layout.artifacts);
    // `corral servers` shows what its view could not refresh (core/layers/view_refresh.ts).
    start.layers?.view.publish(spec.entry.name);
    start.args = [...layout.args, "--", ...cmd];
    return start;
  } catch (err) {
    _undo(start);
    throw err;
  }
}

/** Kill and exit of a spawned server: its limits, proxy and layers given back once. */
function _lifecycle(
  spec: LaunchSpec,
  start: _Start,
  { child, limits }: LimitedChild,
): Omit<Launched, "secrets"> {
  const p = spec.policy;
  let dead = false;
  const kill = () => {
    if (dead) return;
    dead = true;
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    void limits.release();
    start.egress?.close();
  };
  const exited = child.status.then(async (status) => {
    dead = true;
    start.egress?.close();
    const forked = (await limits.release()).hitProcessLimit;
    // What it wrote last is settled; its layers go.
    if (start.layers) {
      const report = await start.layers.close().catch(() => undefined);
      if (report) spec.onChanges?.(report);
    }
    await start.folders?.remove();
    if (forked) return `hit its process limit (${p.max_processes}) and was stopped`;
    if (status.code === 97) return `could not join its ${limits.kind} limits`;
    return `exited (code ${status.code}${status.signal ? `, ${status.signal}` : ""})`;
  });
  return { child, layers: start.layers, kill, exited };
}

function _undo(start: _Start): void {
  start.egress?.close();
  start.layers?.retire();
  void start.folders?.remove();
}
