/**
 * The rules of the jail's second wall: what the syscall filter refuses to
 * every jailed process (tools, their subprocesses, hosted servers,
 * discovery, corral's tree applier), and what it answers. This file is the
 * one place they are written; ./builder.ts compiles them with libseccomp,
 * ./check_filter.ts proves the compiled program says exactly this.
 *
 * Besides these rules, the filter itself:
 * - refuses (`EPERM`) every syscall of a foreign ABI: another architecture,
 *   and on x86_64 the x32 bit;
 * - answers `ENOSYS` to every syscall number its table does not know (a
 *   number above the highest one of libseccomp's table, or a gap in it), so
 *   a newer kernel's syscalls are refused until the filter knows them;
 * - never kills: a tool that probes gets an error, not a crash.
 *
 * A toolset may be granted a refused syscall by name in `permissions.json`
 * (`"allow_syscalls": ["unshare"]`): see docs/security.md, "The jail's second wall".
 *
 * @module
 */

/** How a refused call answers: `EPERM`, or `ENOSYS` where libc then falls back. */
export type Answer = "EPERM" | "ENOSYS";

/**
 * When a syscall is refused by one of its arguments (0-based), seen as the
 * kernel reads it:
 * - `anyBit`: refused when any of these bits is set;
 * - `low32`: refused when its low 32 bits are one of these (an `int` or
 *   `unsigned int` argument: the kernel ignores the high bits, so must we);
 * - `onlyIn`: refused unless the whole argument is one of these (a caller
 *   who sets high bits is refused too, which is safe: never fewer refusals).
 */
export type ArgCondition =
  | { arg: number; anyBit: number }
  | { arg: number; low32: readonly number[] }
  | { arg: number; onlyIn: readonly number[] };

/** One rule: these syscalls, refused (when `when` holds, else always) with `answer`. */
export interface SeccompRule {
  /** The class it belongs to, for messages and docs. */
  group: string;
  syscalls: readonly string[];
  answer: Answer;
  when?: ArgCondition;
  /** Why, in a sentence. */
  why: string;
}

/** `CLONE_NEW*` flags that `clone` takes (`CLONE_NEWTIME` only exists for `clone3`). */
export const CLONE_NEW_FLAGS = 0x00020000 | // CLONE_NEWNS
  0x02000000 | // CLONE_NEWCGROUP
  0x04000000 | // CLONE_NEWUTS
  0x08000000 | // CLONE_NEWIPC
  0x10000000 | // CLONE_NEWUSER
  0x20000000 | // CLONE_NEWPID
  0x40000000; // CLONE_NEWNET

/** The socket families a jailed process may open: AF_UNIX, AF_INET, AF_INET6, AF_NETLINK. */
export const SOCKET_FAMILIES = [1, 2, 10, 16] as const;

/** `TIOCSTI` (type into a terminal) and `TIOCLINUX` (its selection and paste). */
export const TERMINAL_INJECTION = [0x5412, 0x541c] as const;

/** What every jailed process is refused. */
export const SECCOMP_RULES: readonly SeccompRule[] = [
  {
    group: "namespaces",
    syscalls: ["unshare", "setns"],
    answer: "EPERM",
    why: "a new user namespace gives CAP_SYS_ADMIN over it: the first step of most kernel exploits",
  },
  {
    group: "namespaces",
    syscalls: ["clone"],
    answer: "EPERM",
    when: { arg: 0, anyBit: CLONE_NEW_FLAGS },
    why: "the same through clone: threads and fork stay allowed",
  },
  {
    group: "namespaces",
    syscalls: ["clone3"],
    answer: "ENOSYS",
    why: "its flags sit behind a pointer no filter can read; libc falls back to clone",
  },
  {
    group: "mount",
    syscalls: [
      "mount",
      "umount2",
      "pivot_root",
      "open_tree",
      "move_mount",
      "fsopen",
      "fsconfig",
      "fsmount",
      "fspick",
      "mount_setattr",
    ],
    answer: "EPERM",
    why: "the namespace's mounts are the grant: nothing inside changes them",
  },
  {
    group: "io_uring",
    syscalls: ["io_uring_setup", "io_uring_enter", "io_uring_register"],
    answer: "EPERM",
    why: "a second way to every syscall, and a large share of recent kernel bugs",
  },
  {
    group: "kernel objects",
    syscalls: ["bpf", "perf_event_open", "userfaultfd"],
    answer: "EPERM",
    why: "code and hooks run by the kernel, and the race helper of many exploits",
  },
  {
    group: "keyrings",
    syscalls: ["keyctl", "add_key", "request_key"],
    answer: "EPERM",
    why: "keyrings are not namespaced",
  },
  {
    group: "other processes",
    syscalls: ["ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise"],
    answer: "EPERM",
    why: "no process reads, writes or steals from another",
  },
  {
    group: "the machine",
    syscalls: [
      "kexec_load",
      "kexec_file_load",
      "init_module",
      "finit_module",
      "delete_module",
      "reboot",
      "swapon",
      "swapoff",
      "acct",
      "quotactl",
      "quotactl_fd",
      "syslog",
      "iopl",
      "ioperm",
      "uselib",
      "lookup_dcookie",
      "vhangup",
    ],
    answer: "EPERM",
    why: "the kernel, its modules, devices and logs belong to the host",
  },
  {
    group: "file handles",
    syscalls: ["open_by_handle_at", "name_to_handle_at"],
    answer: "EPERM",
    why: "a handle opens a file by number, past every mount",
  },
  {
    group: "persona",
    syscalls: ["personality"],
    answer: "EPERM",
    when: { arg: 0, onlyIn: [0] },
    why: "only the default persona (PER_LINUX): no other ABI quirks, no address-space tricks",
  },
  {
    group: "terminal",
    syscalls: ["ioctl"],
    answer: "EPERM",
    when: { arg: 1, low32: TERMINAL_INJECTION },
    why: "no typing into the operator's terminal",
  },
  {
    group: "sockets",
    syscalls: ["socket", "socketpair"],
    answer: "EPERM",
    when: { arg: 0, onlyIn: SOCKET_FAMILIES },
    why: "AF_VSOCK and the rest cross the network namespace or reach kernel code no tool needs",
  },
];

/**
 * The syscalls whose exception keeps user namespaces possible: with one of
 * them granted, bwrap does not get `--disable-userns` either.
 */
export const USERNS_SYSCALLS: readonly string[] = ["unshare", "clone", "clone3"];

/**
 * Every syscall a rule names: the names `allow_syscalls` accepts.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { refusedSyscalls } from "./rules.ts";
 * assert.ok(refusedSyscalls().includes("io_uring_setup") && refusedSyscalls().includes("socket"));
 * ```
 */
export function refusedSyscalls(): string[] {
  return SECCOMP_RULES.flatMap((r) => [...r.syscalls]);
}
