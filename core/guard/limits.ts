/**
 * Limits per sandbox: how many processes (threads count too) and how much
 * memory one process sandbox and everything it starts may use.
 *
 * - **cgroup v2**, where the unified hierarchy is mounted and writable: a
 *   child group per sandbox with `pids.max` and `memory.max`.
 * - **cgroup v1**, where the `pids` and `memory` controllers are writable:
 *   the same with `pids.max` and `memory.limit_in_bytes`.
 * - **rlimits** otherwise: `ulimit -u` (processes per user; NOT enforced
 *   for root) and the V8 heap limit of the sandbox.
 *
 * The sandbox's first process moves itself into its group before it execs
 * bwrap ({@link limitedCommand}), so every process of the sandbox is
 * counted from the start. When the sandbox ends, every process left in its
 * group is killed and the group removed.
 *
 * @module
 */
import { join } from "node:path";

/** Which mechanism enforces the limits here. */
export type LimitKind = "cgroup2" | "cgroup1" | "rlimit";

/** Limits of one sandbox. */
export interface LimitSpec {
  /** Processes and threads at once. */
  pids: number;
  /** Memory of all its processes, in MiB. */
  memoryMb: number;
}

/** A sandbox's limit groups, made by {@link createLimits}. */
export interface SandboxLimits {
  readonly kind: LimitKind;
  /** The group directories the first process joins (none for rlimits). */
  readonly groups: string[];
  readonly spec: LimitSpec;
  /** Kill every process left in the groups and remove them. */
  release(): void;
}

interface _Found {
  kind: LimitKind;
  /** Parent directories new groups are made in (v1: pids, memory). */
  parents: string[];
}

let _found: _Found | undefined;

/** The mechanism in force on this machine (probed once). */
export function limitKind(): LimitKind {
  return _probe().kind;
}

function _own(controller: string): string {
  // This process's group in a v1 hierarchy (e.g. "memory:/a/b"), else "/".
  try {
    for (const line of Deno.readTextFileSync("/proc/self/cgroup").split("\n")) {
      const [, ctrls, path] = line.split(":");
      if (ctrls?.split(",").includes(controller)) return path || "/";
    }
  } catch { /* not Linux */ }
  return "/";
}

function _writableDir(dir: string): boolean {
  const probe = join(dir, `corral-probe-${Deno.pid}-${crypto.randomUUID().slice(0, 12)}`);
  try {
    Deno.mkdirSync(probe);
    Deno.removeSync(probe);
    return true;
  } catch {
    return false;
  }
}

function _probe(): _Found {
  if (_found) return _found;
  const root = "/sys/fs/cgroup";
  try {
    const controllers = Deno.readTextFileSync(join(root, "cgroup.controllers"));
    if (/\bpids\b/.test(controllers) && /\bmemory\b/.test(controllers) && _writableDir(root)) {
      try {
        Deno.writeTextFileSync(join(root, "cgroup.subtree_control"), "+pids +memory");
        _found = { kind: "cgroup2", parents: [root] };
        _sweep(_found.parents);
        return _found;
      } catch { /* cannot enable: try v1 */ }
    }
  } catch { /* not a v2 root */ }
  const pids = join(root, "pids", _own("pids"));
  const memory = join(root, "memory", _own("memory"));
  if (_writableDir(pids) && _writableDir(memory)) {
    _found = { kind: "cgroup1", parents: [pids, memory] };
    _sweep(_found.parents);
    return _found;
  }
  return _found = { kind: "rlimit", parents: [] };
}

/** Remove the empty groups left by corral hosts that are gone (a host exits before its last group is reaped). */
function _sweep(parents: string[]): void {
  for (const parent of parents) {
    try {
      for (const e of Deno.readDirSync(parent)) {
        const m = /^corral-(\d+)-/.exec(e.name);
        if (!m || !e.isDirectory) continue;
        try {
          Deno.statSync(`/proc/${m[1]}`);
          continue; // its host still runs
        } catch { /* gone */ }
        try {
          if (_pidsOf(join(parent, e.name)).length === 0) Deno.removeSync(join(parent, e.name));
        } catch { /* busy */ }
      }
    } catch { /* unreadable */ }
  }
}

/** Whether the sandbox of these groups hit its process limit (v1 and v2 `pids.events`). */
export function hitProcessLimit(limits: SandboxLimits): boolean {
  for (const g of limits.groups) {
    try {
      const m = /^max (\d+)/m.exec(Deno.readTextFileSync(join(g, "pids.events")));
      if (m && Number(m[1]) > 0) return true;
    } catch { /* not a pids group */ }
  }
  return false;
}

/**
 * Make the limit groups of a new sandbox (none under rlimits).
 *
 * @example
 * ```ts
 * import { createLimits } from "./limits.ts";
 * const l = createLimits({ pids: 64, memoryMb: 256 });
 * console.assert(l.kind === "rlimit" ? l.groups.length === 0 : l.groups.length > 0);
 * l.release();
 * ```
 */
export function createLimits(spec: LimitSpec): SandboxLimits {
  const found = _probe();
  const name = `corral-${Deno.pid}-${crypto.randomUUID().slice(0, 12)}`;
  const groups: string[] = [];
  const bytes = String(spec.memoryMb * 1024 * 1024);
  try {
    if (found.kind === "cgroup2") {
      const g = join(found.parents[0], name);
      Deno.mkdirSync(g);
      groups.push(g);
      Deno.writeTextFileSync(join(g, "pids.max"), String(spec.pids));
      Deno.writeTextFileSync(join(g, "memory.max"), bytes);
      try {
        Deno.writeTextFileSync(join(g, "memory.swap.max"), "0");
      } catch { /* no swap accounting */ }
    } else if (found.kind === "cgroup1") {
      const [pids, memory] = found.parents.map((p) => join(p, name));
      Deno.mkdirSync(pids);
      groups.push(pids);
      Deno.writeTextFileSync(join(pids, "pids.max"), String(spec.pids));
      Deno.mkdirSync(memory);
      groups.push(memory);
      Deno.writeTextFileSync(join(memory, "memory.limit_in_bytes"), bytes);
      try {
        Deno.writeTextFileSync(join(memory, "memory.memsw.limit_in_bytes"), bytes);
      } catch { /* no swap accounting */ }
    }
  } catch (err) {
    _remove(groups);
    throw new Error(`cannot set up the sandbox's ${found.kind} limits: ${(err as Error).message}`);
  }
  return {
    kind: found.kind,
    groups,
    spec,
    release: () => _remove(groups),
  };
}

function _pidsOf(group: string): number[] {
  try {
    return Deno.readTextFileSync(join(group, "cgroup.procs")).split("\n").filter(Boolean).map(
      Number,
    );
  } catch {
    return [];
  }
}

function _remove(groups: string[]): void {
  for (const g of groups) {
    for (let round = 0; round < 20; round++) {
      const pids = _pidsOf(g);
      if (pids.length === 0) break;
      for (const pid of pids) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch { /* gone */ }
      }
    }
    // A group can be removed only once its last process is reaped: retry briefly.
    const tryRemove = (left: number) => {
      try {
        Deno.removeSync(g);
      } catch {
        if (left > 0) setTimeout(() => tryRemove(left - 1), 50);
      }
    };
    tryRemove(40);
  }
}

/**
 * The command that starts `command args` inside `limits`: a `/bin/sh` that
 * moves itself into the groups (or sets `ulimit -u`), then execs it.
 *
 * @example
 * ```ts
 * import { limitedCommand } from "./limits.ts";
 * const l = { kind: "rlimit" as const, groups: [], spec: { pids: 64, memoryMb: 256 }, release() {} };
 * const c = limitedCommand(l, "/usr/bin/bwrap", ["--", "true"]);
 * console.assert(c.command === "/bin/sh" && c.args.includes("/usr/bin/bwrap"));
 * ```
 */
export function limitedCommand(
  limits: SandboxLimits,
  command: string,
  args: string[],
): { command: string; args: string[] } {
  const script = limits.kind === "rlimit"
    ? `ulimit -u "$1" 2>/dev/null || ulimit -p "$1" 2>/dev/null; shift; exec "$@"`
    : `n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1/cgroup.procs" || exit 97; ` +
      `shift; n=$((n-1)); done; exec "$@"`;
  const head = limits.kind === "rlimit"
    ? [String(limits.spec.pids)]
    : [String(limits.groups.length), ...limits.groups];
  return { command: "/bin/sh", args: ["-c", script, "corral-sandbox", ...head, command, ...args] };
}
