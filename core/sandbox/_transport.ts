/**
 * How the host talks to a running sandbox, whatever it is: a permissioned
 * Web Worker (./_worker_transport.ts) or a child process holding one
 * (./process_transport.ts). Both start from the same entry points and hand
 * Deno the same permissions, computed here from the grant.
 *
 * @module
 */
import type { SandboxPolicy } from "../config/mod.ts";
import type { EgressRecord } from "../egress/mod.ts";
import type { RuntimeFiles, SeccompFiles } from "../jail/mod.ts";
import type { ChangeReport, SandboxLayers } from "../layers/mod.ts";
import type { Grant } from "../tool/mod.ts";
import type { HostMessage, SandboxMessage } from "./protocol.ts";

/** The worker entry point: where tool code is imported and called. */
export const WORKER_ENTRY: string = new URL("./sandbox_worker.ts", import.meta.url).pathname;
/** The child process entry point of process isolation (it runs the sandbox runtime). */
export const CHILD_ENTRY: string = new URL("./sandbox_child.ts", import.meta.url).pathname;

/** A running sandbox, as the host sees it. */
export interface Transport {
  /** Send one message (dropped silently when the sandbox is gone). */
  send(msg: HostMessage): void;
  /** Stop it at once (a process is killed with SIGKILL). */
  kill(): void;
  /** The child's process id (process isolation only). */
  readonly pid?: number;
  /**
   * Resolves once the process and everything it started are gone, what it
   * wrote last is settled and its write layers removed.
   */
  readonly ended?: Promise<void>;
  /** Its write layers (core/layers/): settled after each call. */
  layers?: SandboxLayers;
}

/** What a transport reports back. */
export interface TransportHooks {
  /** A protocol message from the sandbox. */
  onMessage(msg: SandboxMessage): void;
  /** The sandbox died or crashed (not called after `kill()` of a worker). */
  onExit(reason: string): void;
  /** Output that is not a protocol message, and notes about dropped messages. */
  onLog(text: string): void;
  /** What it wrote after its last call, settled when it ended (for the audit log). */
  onChanges?(report: ChangeReport): void;
}

/** What a transport starts. */
export interface TransportSpec {
  /** Label for messages, e.g. `files[r]`. */
  label: string;
  /** Every path the sandbox may read: the grant's, the entry points' and the modules' graphs. */
  read: string[];
  /** Paths, commands and hosts the tool code may use. */
  grant: Grant;
  /** Limits (memory, output size). */
  policy: SandboxPolicy;
  /** Hosts remote module code may be imported from. */
  imports: string[];
  /** The process sandbox's current directory. */
  workspace: string;
  /** Module files, entry points and corral's deno.json/deno.lock (bound read-only). */
  code?: string[];
  /** The toolset's module files (a sandbox started ahead may load built-in ones early). */
  modules?: string[];
  /** Run the process sandbox in this namespace (absent: no namespace, an opt-out). */
  namespace?: SandboxNamespace;
  /** Every connection through the sandbox's egress proxy, allowed or refused. */
  onConnection?: (record: EgressRecord) => void;
}

/** How a process sandbox's namespace is made, besides its grant. */
export interface SandboxNamespace {
  /** The working bwrap binary. */
  bwrap: string;
  /** The jail's second wall, its compiled syscall filter; absent only as an opt-out. */
  seccomp?: SeccompFiles;
  /** The trust base: kept read-only inside write paths. */
  protect: string[];
  /** Secrets: masked inside mounted paths. */
  hide: string[];
  /** The trust base with what each path is: no change there is applied (core/layers/). */
  trust?: readonly { path: string; what: string }[];
  /** Every sandbox's grant paths and the workspace: no link is applied at or above one. */
  grantPaths?: string[];
  /**
   * corral's run folder (egress sockets, its own `/etc` files), fixed when
   * the registry was made (default: `<config dir>/run`, read now).
   */
  runDir?: string;
  /**
   * The runtime files (core/jail/namespace.ts `runtimeFiles`), with the
   * module set's own Deno cache (core/sandbox/emit_cache.ts).
   */
  runtime: RuntimeFiles;
}
