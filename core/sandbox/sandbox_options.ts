/**
 * What a sandbox is made of, and the options of its requests
 * (./sandbox.ts).
 *
 * @module
 */
import type { SandboxPolicy } from "../config/mod.ts";
import type { EgressRecord } from "../egress/mod.ts";
import type { Grant, ReportKind, ReportOptions } from "../tool/mod.ts";
import type { ChangeReport, HoldRequest } from "../layers/mod.ts";
import type { Pins } from "./module_graph.ts";
import type { KnownBytes } from "./pinned_code.ts";
import type { DenoNeeds } from "./discovery_deno_dir.ts";
import type { SandboxNamespace } from "./_transport.ts";
import type { AskKind, SandboxEnv } from "./protocol.ts";

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
  /**
   * Run a process sandbox in the namespace whose mounts are its grant
   * (core/jail/namespace.ts); absent: no namespace (an explicit opt-out).
   */
  namespace?: Omit<SandboxNamespace, "runtime">;
  /** Every connection through the sandbox's egress proxy (for the audit log). */
  onConnection?: (record: EgressRecord) => void;
  /**
   * Changes to the tree settled apart from any call: written by processes a
   * call left running, found when the sandbox ended (for the audit log).
   */
  onChanges?: (report: ChangeReport) => void;
  /**
   * An ask the host refused because no call runs under its id in this
   * sandbox (the call ended, or the id was never one): for the audit log.
   */
  onAskRefused?: (kind: AskKind, reason: string) => void;
  /**
   * The module files as discovery checked them, with their hashes: the
   * sandbox reads exactly these, and is never started while one of them
   * differs from its pin (see core/sandbox/module_graph.ts `pinGraph`).
   */
  pins?: Pins;
  /**
   * A discovery sandbox, which imports its modules once: its pins were taken
   * by this discovery, its copies are written from the bytes that were
   * hashed (`bytes`), and its Deno cache is a lean one
   * (./discovery_deno_dir.ts: `needs` says which npm packages it gets).
   */
  discovery?: { needs: DenoNeeds; bytes?: KnownBytes };
}

/** One request of {@link Sandbox.loadIsolated}. */
export interface LoadRequest {
  modules: string[];
  env: SandboxEnv;
  timeoutMs: number;
  /**
   * What the worker may read (its own module graph, the entry points, the
   * grant), and how long its import may take from the worker's start.
   */
  isolate?: { read: string[]; timeoutMs?: number };
  /** Output of its code. */
  onLog?: (text: string) => void;
}

/** Per-call hooks and limits. */
export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  onReport?: (kind: ReportKind, message: string, options?: ReportOptions) => void;
  onLog?: (text: string) => void;
  config?: unknown;
  /** Answer the tool's questions to the client (sampling, elicitation); absent: none can. */
  onAsk?: (kind: AskKind, params: unknown) => Promise<unknown>;
  /** Hold the call's changes for review instead of applying them (core/layers/hold_state.ts). */
  hold?: HoldRequest;
}
