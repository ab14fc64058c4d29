/**
 * A hosted server's way out of its namespace, when it holds `n`: its own
 * egress proxy (core/egress/egress.ts) on a unix socket, and inside the
 * namespace the bridge (./egress_bridge.ts) that listens where HTTP
 * clients find the proxy (`127.0.0.1:3128`, `HTTP(S)_PROXY`) and, for each
 * `host:port` of its net list, a forwarder at that name and port for any
 * TCP protocol (core/egress/egress_forward.ts), with the names in its
 * `/etc/hosts` and answered by its own name server. The launcher makes its
 * network namespace then (core/jail/launcher.ts): ports below 1024 and
 * granted addresses are the forwarders' there, with no capability given.
 *
 * @module
 */
import { join } from "node:path";
import { codeStoreDir, configDir } from "../config/mod.ts";
import {
  DIRECT_FORWARDS_VAR,
  type DirectForwards,
  type EgressRecord,
  extraAddresses,
  type Forward,
  forwardNames,
  forwardsOf,
  hostPort,
  type InjectedSecret,
  operatorCerts,
  pinnedResolver,
  placeForwards,
  SecretInjector,
  type StartedEgress,
  startEgress,
  TRUST_IN_NAMESPACE,
  trustVars,
  writeTrust,
} from "../egress/mod.ts";
import { EGRESS_SOCKET_IN_NAMESPACE, EGRESS_URL, isIpAddress, proxyVars } from "../guard/mod.ts";
import { etcFiles } from "../jail/mod.ts";
import {
  compiledCorral,
  SELF_PROGRAMS,
  selfCommand,
  selfFile,
  writeSelfFiles,
  WRITTEN_OUT,
} from "../base/mod.ts";

/**
 * The bridge's own files, bound read-only into the namespace under `deno run`;
 * none in a compiled corral, which is the bridge itself (core/base/self_run.ts).
 */
function _bridgeCode(): string[] {
  if (compiledCorral()) return [];
  return [
    SELF_PROGRAMS["__egress-bridge"],
    "core/guard/egress_env.ts",
    "core/egress/forward_bridge.ts",
    "core/egress/egress_forward.ts",
  ].map(selfFile);
}

/** What {@link serverEgress} made: the proxy, and what the namespace needs for it. */
export interface ServerEgress {
  egress: StartedEgress;
  forwards: Forward[];
  /** Variables of the server's environment (the proxy). */
  env: Record<string, string>;
  /** Files bound read-only (the bridge's code). */
  code: string[];
  /** corral's own `/etc` files, `hosts` holding the forwarders' names. */
  etc: string;
  /** Addresses the launcher puts on the namespace's loopback; undefined: no forwarder. */
  netns?: string[];
  /** `command` run behind the bridge (with the deno binary `deno`). */
  wrap(deno: string, command: string[]): string[];
  /**
   * An npm server's `deno run` command whose `node:net` connections to its
   * forwarders go straight to the proxy (../egress/forward_direct.ts), and
   * the variable that says where; unchanged when it has no forwarder.
   */
  direct(command: string[]): { command: string[]; env: Record<string, string> };
}

/** How long a forwarder's name may take to resolve at start before it keeps a loopback alias. */
const _PIN_TIMEOUT_MS = 5_000;

/**
 * Start a hosted server's egress for its net list `net` (set at `listed.where` of `listed.file`).
 * The forwarders' names are resolved now, at grant time, and kept for the
 * server's life: the proxy connects to that address, and inside the
 * namespace the name leads to it too. Its socket and `/etc` files are made
 * in corral's run folder `run`.
 */
export async function serverEgress(
  net: string[],
  listed: { where: string; file?: string },
  onConnection?: (r: EgressRecord) => void,
  injected: InjectedSecret[] = [],
  resolveName?: (hostname: string) => Promise<string[]>,
  run: string = join(configDir(), "run"),
): Promise<ServerEgress> {
  const listedIn = listed.where;
  _injectable(injected, net, listedIn, listed.file);
  // Secrets injected at egress: a CA of this server's own, trusted by it alone.
  // (Loaded only then: the X.509 library costs a start that injects nothing.)
  const ca = injected.length
    ? await (await import("../egress/sandbox_ca.ts")).SandboxCa.create()
    : undefined;
  const named = forwardsOf(net);
  const names = [...new Set(named.map((f) => f.host).filter((h) => !isIpAddress(h)))];
  const resolve = pinnedResolver(names, resolveName);
  const pinned = new Map<string, string>();
  await Promise.all(names.map(async (name) => {
    const found = await _within(resolve(name), _PIN_TIMEOUT_MS).catch(() => undefined);
    if (found?.[0]) pinned.set(name, found[0]);
  }));
  const forwards = placeForwards(named, pinned);
  const egress = startEgress(run, {
    allowed: net,
    listedIn,
    ...(listed.file ? { listedFile: listed.file } : {}),
    resolve,
    ...(onConnection ? { onConnection } : {}),
    ...(ca ? { inject: new SecretInjector(injected, ca, operatorCerts()) } : {}),
  });
  // The operator's trust store, read-only beside the proxy's socket, and its own CA if any.
  const trusted = writeTrust(egress.dir, ca ? [ca.certPem] : []);
  const preload = forwards.length ? await _preload(egress) : [];
  return {
    egress,
    forwards,
    env: { ...proxyVars(EGRESS_URL), ...(trusted ? trustVars(TRUST_IN_NAMESPACE) : {}) },
    code: [..._bridgeCode(), ...preload],
    etc: etcFiles(run, forwardNames(forwards)),
    ...(forwards.length ? { netns: extraAddresses(forwards) } : {}),
    wrap: (deno, command) => _behindBridge(deno, command, forwards),
    direct: (command) => _direct(command, forwards, preload[0]),
  };
}

/**
 * `deno run … ` with ../egress/forward_direct.ts preloaded and the proxy's
 * socket added to its net, read and write flags (the proxy is the only thing
 * it reaches there: every connection is still decided and audited by it).
 */
function _direct(
  command: string[],
  forwards: Forward[],
  preload: string | undefined,
): { command: string[]; env: Record<string, string> } {
  if (!forwards.length || command[1] !== "run" || !preload) return { command, env: {} };
  const socket = EGRESS_SOCKET_IN_NAMESPACE;
  const flags = { net: `unix:${socket}`, read: socket, write: socket };
  const out = [...command];
  for (const [name, value] of Object.entries(flags)) {
    const at = out.findIndex((a) => a === `--allow-${name}` || a.startsWith(`--allow-${name}=`));
    if (at < 0) out.splice(2, 0, `--allow-${name}=${value}`);
    else if (out[at] !== `--allow-${name}`) out[at] += `,${value}`;
  }
  out.splice(2, 0, `--preload=${preload}`);
  const settings: DirectForwards = { socket, forwards };
  return { command: out, env: { [DIRECT_FORWARDS_VAR]: JSON.stringify(settings) } };
}

/**
 * `command` behind the egress bridge (./egress_bridge.ts), which listens
 * where the proxy is: `deno run egress_bridge.ts …`, or in a compiled corral
 * `corral __egress-bridge …` (`deno` is then corral itself).
 */
function _behindBridge(
  deno: string,
  command: string[],
  forwards: Forward[],
): string[] {
  const listen = forwards.map((f) => hostPort(f.listen, f.port));
  // Its name server, when it has forwarders (the launcher lets it take port 53).
  if (forwards.length) listen.push("127.0.0.1:53");
  const flags = [
    "--no-prompt",
    "--no-config",
    "--no-lock",
    `--allow-net=${["127.0.0.1:3128", `unix:${EGRESS_SOCKET_IN_NAMESPACE}`, ...listen].join(",")}`,
    `--allow-read=${EGRESS_SOCKET_IN_NAMESPACE}`,
    `--allow-write=${EGRESS_SOCKET_IN_NAMESPACE}`,
    `--allow-run=${command[0]}`,
  ];
  const args = [EGRESS_SOCKET_IN_NAMESPACE, JSON.stringify(forwards), "--", ...command];
  return selfCommand("__egress-bridge", deno, flags, args).command;
}

/** The preload's copies in corral's code store (first: forward_direct.ts), for this proxy. */
async function _preload(egress: StartedEgress): Promise<string[]> {
  try {
    // ../egress/forward_direct.ts and the one file it imports, copied from corral's own (also in
    // a compiled corral, where its files are not on disk), for a real `deno run` to preload.
    return await writeSelfFiles([...WRITTEN_OUT["egress-preload"]], join(codeStoreDir(), "self"));
  } catch (err) {
    egress.close();
    throw new Error(`cannot write the egress preload to corral's code store: ${err}`);
  }
}

function _within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => timer = setTimeout(() => reject(new Error("timed out")), ms)),
  ]).finally(() => clearTimeout(timer));
}

/** Each host a secret is injected for must be on the net list: else it could never go there. */
function _injectable(
  injected: InjectedSecret[],
  net: string[],
  listedIn: string,
  file = "permissions.json",
): void {
  const hosts = new Set(
    net.map((e) => e.replace(/:\d+$/, "").replace(/^\[|\]$/g, "").toLowerCase()),
  );
  for (const s of injected) {
    const missing = s.hosts.find((h) => !hosts.has(h.replace(/^\[|\]$/g, "")) && !hosts.has("*"));
    if (missing) {
      throw new Error(
        `the secret ${s.name} is injected for ${missing}, which is not on the net list of ` +
          `${listedIn}: add it to ${listedIn}.net in ${file}`,
      );
    }
  }
}
