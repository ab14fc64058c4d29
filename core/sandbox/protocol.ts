/**
 * The one message protocol between the host and a sandbox, used as is over
 * `postMessage` (worker isolation) and framed over stdio (process isolation).
 *
 * @module
 */
import type {
  CallFault,
  Grant,
  LoadDecision,
  ReportKind,
  ReportOptions,
  ToolResult,
} from "../tool/mod.ts";

/** What the host tells the sandbox about the environment of a request. */
export interface SandboxEnv {
  workspace: string;
  grant: Grant;
  /** The plugin's own config section (for `TOOL_SETUP`). */
  config?: unknown;
  /** Results larger than this (as JSON) are cut inside the sandbox. */
  maxOutputBytes?: number;
  /** The files tools refuse files larger than this (policy `max_read_bytes`). */
  maxReadBytes?: number;
  /** HOME of subprocesses (set inside the namespace: its private /tmp). */
  home?: string;
  /** The egress proxy inside the namespace: the only way out (core/egress/egress.ts). */
  proxy?: string;
  /**
   * Values of the environment variables that subprocesses may see (PATH,
   * LANG, TERM and the policy's `env` names), read by the host: the sandbox
   * itself cannot read the environment.
   */
  vars?: Record<string, string>;
}

/**
 * Workers a discovery process runs at once, each importing one plugin
 * (core/sandbox/sandbox_child.ts): the host times a batch by it.
 */
export const ISOLATED_WORKERS: number = (() => {
  try {
    return Math.max(1, Math.min(4, navigator.hardwareConcurrency));
  } catch {
    return 2;
  }
})();

/** Host → sandbox. */
export type HostMessage =
  | {
    type: "load";
    id: number;
    modules: string[];
    env: SandboxEnv;
    /**
     * Import in a worker of its own, holding these read paths (the modules'
     * graph, the entry points' and the grant's): one discovery process then
     * imports several plugins, never two in one realm. `timeoutMs`: how long
     * its import may take from its worker's start (the worker is then
     * dropped and the load answered as timed out).
     */
    isolate?: { read: string[]; timeoutMs?: number };
  }
  | {
    type: "call";
    id: number;
    module: string;
    tool: string;
    args: unknown;
    /** Sent with the first call of a sandbox and when it changes; else the last one holds. */
    env?: SandboxEnv;
  }
  /** Several isolated loads at once (a discovery batch): read whole before any worker starts. */
  | { type: "loads"; loads: Array<Extract<HostMessage, { type: "load" }>> }
  | { type: "cancel"; id: number }
  | { type: "ping"; id: number }
  /** The client's answer to an `ask` (or why there is none). */
  | { type: "answer"; askId: number; result?: unknown; error?: string };

/** A tool as the sandbox describes it to the host (JSON only). */
export interface ToolMeta {
  name: string;
  description: string;
  permissions: string;
  confirm: boolean;
  /** Calls need confirmation when this argument is truthy. */
  confirmWhen?: string;
  /** Commands an `x` tool runs, when it declares them. */
  commands?: string[];
  /** MCP `execution.taskSupport` (core/tool/tool.ts `TaskSupport`). */
  taskSupport?: "optional" | "required" | "forbidden";
  /** Its first questions are rounds of the request; then it becomes a task. */
  taskAfterInput?: boolean;
  style: "class" | "module";
  inputSchema: Record<string, unknown>;
  /** MCP annotations as a hosted server gave them (core/hosted/). */
  annotations?: Record<string, unknown>;
  /** A hosted server's output schema (its `structuredContent`), as approved. */
  outputSchema?: Record<string, unknown>;
  /** A hosted server's icons, as approved (core/hosted/approvals.ts). */
  icons?: Array<Record<string, unknown>>;
  load: LoadDecision;
}

/** What loading one module gave. */
export interface ModuleMeta {
  module: string;
  tools: ToolMeta[];
  /** Contract breaches of single exports; the rest of the module still loads. */
  problems: string[];
  /** The module as a whole failed (import error, `is_configured` false, …). */
  error?: string;
  /** `is_configured()` returned false. */
  notConfigured?: boolean;
}

/** Sandbox → host. */
export type SandboxMessage =
  | {
    type: "ready";
    /** Process sandboxes: the state of each permission kind the child process still holds. */
    held?: Record<string, string>;
  }
  | { type: "loaded"; id: number; modules: ModuleMeta[] }
  | {
    type: "result";
    id: number;
    result: ToolResult;
    /** Why the call failed when it was not the tool's own answer (core/tool/result.ts CallFault). */
    fault?: CallFault;
  }
  | { type: "report"; id: number; kind: ReportKind; message: string; options?: ReportOptions }
  | { type: "log"; id?: number; text: string }
  | { type: "pong"; id: number }
  /** A running call asks the client that made it (sampling, elicitation or its roots). */
  | { type: "ask"; id: number; askId: number; kind: AskKind; params: unknown };

/** What a tool may ask the client that made its call. */
export type AskKind = "sample" | "elicit" | "roots";

/**
 * Where a tool's own name for a question travels in its params' `_meta`
 * (`ctx.elicit(params, { key })`): a 2026-07-28 client sees it as the
 * question's key in `inputRequests`; never sent to a client otherwise.
 */
export const ASK_KEY_META = "corral/key";

/** Marks a framed protocol line on a process sandbox's stdout. */
export const FRAME_MARK = "\x1e";
