/**
 * The schema of `permissions.json` (zod): a sandbox's entry (toolsets,
 * plugins), a hosted server's (with `sys`), tools, and the protected paths.
 * ./policy.ts validates and resolves it.
 *
 * @module
 */
import { z } from "zod";
import { refusedSyscalls } from "../seccomp/mod.ts";
import { CALL_LIMIT_KEYS } from "./_call_limits.ts";
import { LAYER_LIMIT_KEYS } from "./layer_limits.ts";
import { closestNames } from "./closest.ts";
import { serverSysSchema } from "./_server_sys.ts";

/** A sandbox's entry: toolsets and plugins. */
export const sandboxSchema = z.object({
  read: z.array(z.string()).optional().describe(
    "Paths the toolset may read, relative to the workspace",
  ),
  write: z.array(z.string()).optional().describe("Paths the toolset may write"),
  run: z.array(z.string()).optional().describe("Commands the toolset may run"),
  net: z.array(z.string()).optional().describe("Hosts (host or host:port) the toolset may reach"),
  env: z.array(z.string()).optional().describe("Environment variable names subprocesses inherit"),
  isolation: z.enum(["worker", "process"]).optional(),
  timeout_ms: z.number().int().positive().max(86_400_000).optional(),
  discovery_timeout_ms: z.number().int().positive().max(600_000).optional().describe(
    "How long importing a module may take at discovery (default: timeout_ms, at most 10 s)",
  ),
  discovery_batch: z.number().int().min(1).max(1024).optional().describe(
    "Plugins one discovery process imports at most, each in a worker of its own (default 64; 1: a process each)",
  ),
  memory_mb: z.number().int().min(32).max(65_536).optional(),
  max_output_bytes: z.number().int().min(1024).max(1_073_741_824).optional(),
  max_read_bytes: z.number().int().min(1024).max(1_099_511_627_776).optional().describe(
    "The files tools refuse to read a file larger than this",
  ),
  max_processes: z.number().int().min(16).max(65_536).optional().describe(
    "Processes and threads one process sandbox may hold at once (its Deno counts too)",
  ),
  allow_override: z.boolean().optional().describe("A plugin may replace built-in tools"),
  jail: z.enum(["required", "auto", "off"]).optional().describe(
    'The sandbox namespace (bwrap): required (default; "auto" is the same) or off (opt out)',
  ),
  seccomp: z.enum(["required", "off"]).optional().describe(
    "The jail's syscall filter: required (default) or off (opt out; the namespace stays)",
  ),
  allow_syscalls: z.array(_refusedSyscall()).optional().describe(
    "Syscalls the jail's filter refuses that this toolset may make (docs/security.md, The jail's second wall)",
  ),
  limits: z.enum(["cgroup", "rlimit"]).optional().describe(
    "cgroup (default; rlimits where they bind) or rlimit (accept rlimits even as root: an opt-out)",
  ),
  redact_args: z.boolean().optional().describe(
    "Audit lines keep only the digest and size of the arguments, not even their shape",
  ),
  hold: z.boolean().optional().describe(
    "Hold every call's changes for review instead of applying them (corral changes)",
  ),
  audit_args: z.enum(["values", "shape"]).optional().describe(
    'What audit lines keep of the arguments: "shape" (default: types, keys, lengths, size) or "values"',
  ),
  ...CALL_LIMIT_KEYS,
  ...LAYER_LIMIT_KEYS,
}).strict();

/** A name of core/seccomp/rules.ts: an error names the bad value and the closest names. */
function _refusedSyscall() {
  return z.string().refine((name) => refusedSyscalls().includes(name), (name) => {
    const near = closestNames(name, refusedSyscalls(), 3);
    return {
      message: `"${name}" is no syscall the jail's filter refuses` +
        (near.length ? ` (did you mean: ${near.join(", ")}?)` : "") +
        ` (core/seccomp/rules.ts lists them)`,
    };
  });
}

/** A hosted server's entry: a sandbox's, plus the Deno `--allow-sys` names of an npm server. */
export const serverSchema = sandboxSchema.extend({
  sys: serverSysSchema,
}).strict();

const _toolSchema = z.object({
  confirm: z.enum(["ask", "always", "never"]).optional(),
  hold: z.boolean().optional().describe(
    "Hold the tool's changes for review instead of applying them (corral changes)",
  ),
}).strict();

export const policyFileSchema = z.object({
  $schema: z.string().optional(),
  $comment: z.string().optional(),
  // Defaults hold limits only: grants are always named per toolset or plugin.
  defaults: sandboxSchema.omit({
    read: true,
    write: true,
    run: true,
    net: true,
    allow_override: true,
    // A syscall is granted per toolset, by name, never to every one at once.
    allow_syscalls: true,
  })
    .strict().optional(),
  toolsets: z.record(z.string(), sandboxSchema).optional(),
  plugins: z.record(z.string(), sandboxSchema).optional(),
  servers: z.record(z.string(), serverSchema).optional(),
  tools: z.record(z.string(), _toolSchema).optional(),
  protect: z.array(z.string()).optional().describe(
    "More paths kept read-only inside every write grant (docs/security.md, Protected files)",
  ),
  unprotect: z.array(z.string()).optional().describe(
    "Default protected paths lifted, one by one (docs/security.md, Protected files)",
  ),
}).strict();

/** The raw shape of `permissions.json`. */
export type PolicyFile = z.infer<typeof policyFileSchema>;
// A server's entry is a sandbox's with `sys`; toolsets and plugins never have it.
export type RawSandbox = z.infer<typeof serverSchema>;
