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
 * The sandbox's first process makes its groups and moves itself into them
 * before it execs bwrap ({@link limitedCommand}), so every process of the
 * sandbox is counted from the start. When the sandbox ends, every process left in its
 * groups is killed and the groups removed. In a namespace, that first process is
 * `/bin/bash`, the launcher (./launcher.ts), which also opens and checks every
 * path bwrap binds, mounts the write layers, and hands bwrap the open
 * descriptors and its arguments on a pipe.
 *
 * Deno lets only `--allow-all` touch `/proc` and `/sys`, and the host does
 * not run with it: every cgroup file is read and written by `/bin/sh`
 * (the host holds `--allow-run`, which process sandboxes need anyway),
 * running the programs beside this file by path: ./limits_probe.sh,
 * ./limits_join.sh and ./limits_release.sh.
 *
 * @module
 */
import { launcherCommand } from "./launcher.ts";
import { type ShellProgram, shellProgram } from "../base/mod.ts";

export { REFUSED_EXIT, REFUSED_MARK, VERIFY_ARG } from "./launcher.ts";

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
  /**
   * Kill every process left in the groups and remove them; resolves to
   * whether the sandbox ever hit its process limit. Safe to call twice.
   */
  release(): Promise<{ hitProcessLimit: boolean }>;
}

/** What the probe found: the mechanism, where groups are made, whether this is root. */
export interface LimitsProbe {
  kind: LimitKind;
  /** Parent directories new groups are made in (v1: pids, memory). */
  parents: string[];
  /** This process runs as root (rlimits do not bind it). */
  root: boolean;
}

type _Found = LimitsProbe;

let _found: _Found | undefined;

/** What the probe found (probing now when it has not yet: a blocking `/bin/sh`). */
export function limitsProbe(): LimitsProbe {
  return _probe();
}

/** `/bin/sh PROGRAM` with `args`, a clean environment, stdout captured. */
function _shCommand(program: ShellProgram, args: string[]): Deno.Command {
  return new Deno.Command("/bin/sh", {
    args: [shellProgram(program), ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin" },
  });
}

function _sh(program: ShellProgram, args: string[]): { ok: boolean; out: string } {
  // Outside the try: a compiled corral with no copy of its program says so, rather than
  // probing nothing.
  const command = _shCommand(program, args);
  try {
    const r = command.outputSync();
    return { ok: r.success, out: new TextDecoder().decode(r.stdout) };
  } catch {
    return { ok: false, out: "" };
  }
}

function _probe(): _Found {
  // Once per process: a second probe (a sandbox start, then the banner) would block again.
  return _found ??= _parseProbe(_sh("core/jail/limits_probe.sh", []).out);
}

let _probing: Promise<void> | undefined;

/**
 * Probe the mechanism without blocking (the probe is a `/bin/sh` with a few
 * commands): call early, so that the first sandbox does not wait for it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { limitKind, probeLimits } from "./limits.ts";
 * await probeLimits();
 * assert.ok(["cgroup2", "cgroup1", "rlimit"].includes(limitKind()));
 * ```
 */
export function probeLimits(): Promise<void> {
  return _probing ??= (async () => {
    if (_found) return;
    try {
      const r = await _shCommand("core/jail/limits_probe.sh", []).output();
      _found ??= _parseProbe(new TextDecoder().decode(r.stdout));
    } catch { /* no --allow-run: the synchronous probe says so when it matters */ }
  })();
}

function _parseProbe(out: string): _Found {
  const [uid, line = ""] = out.trim().split("\n");
  const root = uid?.trim() !== "" && Number(uid) === 0;
  const [kind, ...parents] = line.trim().split(" ");
  if ((kind === "cgroup2" || kind === "cgroup1") && parents.length) {
    return _found = { kind, parents: parents.map((p) => p.replace(/\/+$/, "")), root };
  }
  return _found = { kind: "rlimit", parents: [], root };
}

/**
 * The mechanism in force on this machine (probed once per process).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { limitKind } from "./limits.ts";
 * assert.ok(["cgroup2", "cgroup1", "rlimit"].includes(limitKind()));
 * ```
 */
export function limitKind(): LimitKind {
  return _probe().kind;
}

/**
 * Why this machine cannot limit a sandbox, or undefined: without a writable
 * cgroup, rlimits stand in, but they do not bind root; then only an
 * explicit opt-out (`"limits": "rlimit"` in the policy, `allowRlimit`)
 * accepts them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { limitsMissing } from "./limits.ts";
 * assert.ok(limitsMissing(true) === undefined);
 * ```
 */
export function limitsMissing(allowRlimit: boolean, found = _probe()): string | undefined {
  if (found.kind !== "rlimit" || !found.root || allowRlimit) return undefined;
  return "no writable cgroup here, and rlimits do not bind root, so the sandbox's processes " +
    "and memory cannot be limited: make /sys/fs/cgroup writable (cgroup v2 or v1 pids and " +
    'memory), or accept rlimits explicitly with "limits": "rlimit" in permissions.json';
}

/**
 * Name the limit groups of a new sandbox (none under rlimits); its first
 * process makes them ({@link limitedCommand}). Throws when no limit would
 * bind and `allowRlimit` is not set ({@link limitsMissing}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createLimits } from "./limits.ts";
 * const l = createLimits({ pids: 64, memoryMb: 256 }, true);
 * assert.ok(l.kind === "rlimit" ? l.groups.length === 0 : l.groups.length > 0);
 * await l.release();
 * ```
 */
export function createLimits(
  spec: LimitSpec,
  allowRlimit = false,
  found: LimitsProbe = _probe(),
): SandboxLimits {
  const missing = limitsMissing(allowRlimit, found);
  if (missing) throw new Error(missing);
  const name = `corral-${Deno.pid}-${crypto.randomUUID().slice(0, 12)}`;
  const groups = found.parents.map((p) => `${p}/${name}`);
  // The groups themselves are made by the sandbox's first process, just
  // before it joins them ({@link limitedCommand}): no extra process, and the
  // host's event loop never waits for it.
  let released: Promise<{ hitProcessLimit: boolean }> | undefined;
  return {
    kind: found.kind,
    groups,
    spec,
    release: () =>
      released ??= groups.length === 0
        ? Promise.resolve({ hitProcessLimit: false })
        : _shCommand("core/jail/limits_release.sh", groups).output().then(
          (r) => ({ hitProcessLimit: new TextDecoder().decode(r.stdout).includes("hit=1") }),
          () => ({ hitProcessLimit: false }),
        ),
  };
}

/**
 * The command that starts `command args` inside `limits`: `/bin/sh
 * ./limits_join.sh`, which makes the groups, moves itself into them (or sets
 * `ulimit -u`), then execs it.
 *
 * With `openBinds` (a namespace: `command` is bwrap, `args` its arguments,
 * then `--`, then what runs inside), what it execs is the launcher
 * (./launcher.ts): it binds what it opened (each `--bind-fd`/`--ro-bind-fd`
 * takes a PATH where bwrap takes a descriptor) and mounts the write layers;
 * a path that is no longer exactly itself stops the start (exit
 * `REFUSED_EXIT`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { limitedCommand } from "./limits.ts";
 * const l = {
 *   kind: "rlimit" as const, groups: [], spec: { pids: 64, memoryMb: 256 },
 *   release: () => Promise.resolve({ hitProcessLimit: false }),
 * };
 * const c = limitedCommand(l, "/usr/bin/bwrap", ["--", "true"]);
 * assert.ok(c.command === "/bin/sh" && c.args[0].endsWith("/limits_join.sh"));
 * assert.deepEqual(c.args.slice(1), ["rlimit", "64", "268435456", "--", "/usr/bin/bwrap", "--", "true"]);
 * const o = limitedCommand(l, "/usr/bin/bwrap", ["--bind-fd", "/w", "/w", "--", "true"], true);
 * assert.ok(o.args[5] === "/bin/bash" && o.args[6].endsWith("/launch.sh"));
 * ```
 */
export function limitedCommand(
  limits: SandboxLimits,
  command: string,
  args: string[],
  openBinds = false,
): { command: string; args: string[] } {
  const bytes = String(limits.spec.memoryMb * 1024 * 1024);
  const pids = String(limits.spec.pids);
  return {
    command: "/bin/sh",
    args: [
      shellProgram("core/jail/limits_join.sh"),
      limits.kind,
      pids,
      bytes,
      ...limits.groups,
      "--",
      ...(openBinds ? launcherCommand() : []),
      command,
      ...args,
    ],
  };
}

/** What {@link spawnLimited} started: the child and the limits it runs in. */
export interface LimitedChild {
  child: Deno.ChildProcess;
  limits: SandboxLimits;
}

/**
 * Start `command args` in new limits of `spec` (`allowRlimit` as
 * {@link createLimits}) through {@link limitedCommand}: with a clear
 * environment of `env`, in `cwd`, stdio piped. When the spawn itself fails
 * the limits are released before the error is thrown on.
 */
export function spawnLimited(
  spec: LimitSpec,
  allowRlimit: boolean,
  command: string,
  args: string[],
  o: { openBinds: boolean; cwd: string; env: Record<string, string> },
  found?: LimitsProbe,
): LimitedChild {
  const limits = createLimits(spec, allowRlimit, found);
  const wrapped = limitedCommand(limits, command, args, o.openBinds);
  try {
    const child = new Deno.Command(wrapped.command, {
      args: wrapped.args,
      cwd: o.cwd,
      clearEnv: true,
      env: o.env,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    return { child, limits };
  } catch (err) {
    void limits.release();
    throw err;
  }
}
