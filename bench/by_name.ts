/**
 * The namespace launch as it was before fd binding (section 7's baseline):
 * takes the command a process sandbox starts today (core/sandbox/
 * process_transport.ts: `/bin/sh` joining the limits (core/jail/limits_join.sh),
 * then core/jail/launch.sh that closes inherited descriptors, opens and checks
 * every bound path and hands bwrap descriptors and an `--args` pipe, then the
 * execute-only runtime run by an execute-only `/bin/sh` as pid 1) and
 * rewrites it into the same bwrap namespace bound by name: `/bin/sh` joins
 * the same cgroup and execs bwrap with `--bind`/`--ro-bind` of the same
 * paths, with no checks, no pipe, no sealed runtime, and no syscall filter
 * (it came later, and section 7 measures it apart). For the bench only:
 * nothing in corral starts a sandbox this way.
 *
 * @module
 */
import {
  limitedCommand,
  limitKind,
  type SandboxLimits,
  SECCOMP_ARG,
  VERIFY_ARG,
} from "../core/jail/mod.ts";
import { sealedNamespace } from "../core/sandbox/mod.ts";

/** A sandbox's start command today, taken apart. */
export interface Launch {
  /** The join program and its limit kind (`/bin/sh` runs core/jail/limits_join.sh KIND). */
  pre: string[];
  /** The join's head: pids, bytes, the groups and `--`. */
  head: string[];
  /** The launcher that opens and checks what it binds: `/bin/bash launch.sh UNSHARE`. */
  launcher: string[];
  bwrap: string;
  /** bwrap's options, with `--bind-fd PATH DEST` as the launcher takes them. */
  options: string[];
  /** After bwrap's `--`: the sealed pid 1, the runtime and its arguments. */
  inner: string[];
}

/**
 * Take today's start command apart (`/bin/sh limits_join.sh KIND PIDS BYTES
 * GROUPS… -- /bin/bash launch.sh UNSHARE bwrap OPTIONS… -- INNER…`); throws
 * when it has another shape, so that the bench never measures something else.
 */
export function parseLaunch(command: string, args: string[]): Launch {
  if (!isLaunch(command, args)) {
    throw new Error(`bench: not a namespaced sandbox start: ${command} ${args.slice(0, 3)}`);
  }
  const headEnd = args.indexOf("--", 2) + 1;
  const at = headEnd + 3; // after /bin/bash launch.sh UNSHARE
  const sep = args.indexOf("--", at + 1);
  if (sep < 0) throw new Error("bench: bwrap's arguments have no `--`");
  return {
    pre: args.slice(0, 2),
    head: args.slice(2, headEnd),
    launcher: args.slice(headEnd, at),
    bwrap: args[at],
    options: args.slice(at + 1, sep),
    inner: args.slice(sep + 1),
  };
}

/** Whether `command` with `args` is a namespaced sandbox's start (the fd-binding launcher). */
export function isLaunch(command: string, args: readonly string[] | undefined): boolean {
  if (command !== "/bin/sh" || !args?.[0]?.endsWith("/limits_join.sh")) return false;
  const headEnd = args.indexOf("--", 2) + 1;
  return headEnd > 0 && args[headEnd] === "/bin/bash" &&
    (args[headEnd + 1] ?? "").endsWith("/launch.sh");
}

/** Today's command again, from its parts. */
export function todayCommand(l: Launch): { command: string; args: string[] } {
  return {
    command: "/bin/sh",
    args: [...l.pre, ...l.head, ...l.launcher, l.bwrap, ...l.options, "--", ...l.inner],
  };
}

/**
 * The launch without the sealed runtime: bwrap's `--as-pid-1` and the
 * execute-only copies left out, the runtime run directly (as before).
 */
export function unseal(l: Launch): Launch {
  if (l.inner[3] !== "corral-init") return l;
  const sealed = sealedNamespace(l.inner[4]);
  const at = l.options.indexOf(sealed.bwrap[0]);
  if (at < 0 || sealed.bwrap.some((a, i) => l.options[at + i] !== a)) {
    throw new Error("bench: the sealed runtime's bwrap arguments are not where expected");
  }
  return {
    ...l,
    options: [...l.options.slice(0, at), ...l.options.slice(at + sealed.bwrap.length)],
    inner: l.inner.slice(sealed.command.length),
  };
}

/** The same namespace bound by name, launched by `/bin/sh` as before fd binding. */
export function byNameCommand(launch: Launch): { command: string; args: string[] } {
  const l = unseal(launch);
  const options = l.options;
  const out: string[] = [];
  for (let i = 0; i < options.length; i++) {
    const o = options[i];
    if (o === "--bind-fd") out.push("--bind");
    else if (o === "--ro-bind-fd") out.push("--ro-bind");
    else if (o === VERIFY_ARG) i++; // a check only: nothing to bind
    else if (o === SECCOMP_ARG) i++; // the filter: not in the namespace as it was
    else if (o === "--unshare-user" || o === "--disable-userns") continue;
    else out.push(o);
  }
  const [pids, bytes, ...rest] = l.head;
  const limits: SandboxLimits = {
    kind: limitKind(),
    groups: rest.filter((g) => g !== "--"),
    spec: { pids: Number(pids), memoryMb: Number(bytes ?? 0) / 1024 / 1024 },
    release: () => Promise.resolve({ hitProcessLimit: false }),
  };
  return limitedCommand(limits, l.bwrap, [...out, "--", ...l.inner], false);
}

/**
 * The launch with fresh limit groups in place of the ones it named (the
 * launch-only rounds start it again and again) and `inner`'s runtime
 * arguments replaced by `runtimeArgs`.
 */
export function relaunch(l: Launch, groups: string[], runtimeArgs: string[]): Launch {
  const head = [l.head[0], l.head[1], ...groups, "--"];
  const sealedLen = l.inner[3] === "corral-init" ? 4 : 0;
  const inner = [...l.inner.slice(0, sealedLen + 1), ...runtimeArgs];
  return { ...l, head, inner };
}
