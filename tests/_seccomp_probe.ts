// The attack of the seccomp tests: every refused class tried with arguments
// that would make the kernel answer EBADF, EFAULT, EINVAL or ESRCH if the
// call were let through (tests/fixtures/seccomp/probe.py runs them), and what
// the filter must answer instead. `reaches`: without the filter, the kernel
// answers something else than the filter would (its own checks do not
// refuse first), which the control run shows.
import assert from "node:assert/strict";
import { join } from "node:path";
import { ARCH_TABLES, CLONE_NEW_FLAGS } from "../core/seccomp/mod.ts";
import { ROOT } from "../testing/mod.ts";

export const PROBE = join(ROOT, "tests", "fixtures", "seccomp", "probe.py");

/** One syscall tried. */
export interface ProbeCase {
  name: string;
  nr: number;
  /** Decimal strings (64-bit values), or "PID" for the probe's own. */
  args: string[];
  want: "EPERM" | "ENOSYS";
  reaches: boolean;
}

const _ERRNO: Record<number, string> = { 1: "EPERM", 38: "ENOSYS" };
const M1 = "18446744073709551615"; // -1 as 64 bits
const _HIGH = 1n << 32n;

/** The cases for this machine's architecture. */
export function probeCases(): ProbeCase[] {
  const t = ARCH_TABLES[Deno.build.arch];
  const out: ProbeCase[] = [];
  const add = (
    name: string,
    args: (string | number | bigint)[],
    reaches: boolean,
    want: "EPERM" | "ENOSYS" = "EPERM",
    label = name,
  ) => {
    const nr = t.numbers[name];
    if (nr === undefined) return;
    out.push({ name: label, nr, args: args.map(String), want, reaches });
  };
  // Namespaces: bad flags (EINVAL) or a bad descriptor (EBADF) if let through.
  add("unshare", [M1], true);
  add("setns", [M1, 0], true);
  for (let bit = 1; bit < 2 ** 31; bit *= 2) {
    // CLONE_SIGHAND without CLONE_VM: EINVAL before any process is made.
    if (bit & CLONE_NEW_FLAGS) {
      add("clone", [bit | 0x800 | 17, 0, 0, 0, 0], true, "EPERM", `clone(0x${bit.toString(16)})`);
    }
  }
  add("clone3", [1, 0], true, "ENOSYS");
  // The mount family: bad pointers (EFAULT) where the kernel reads them first.
  add("mount", [1, 1, 1, 0, 0], true);
  add("umount2", [1, 0], true);
  add("open_tree", [M1, 1, 0], true);
  add("fsconfig", [M1, 0, 0, 0, 0], true);
  add("mount_setattr", [M1, 1, 0, 1, 0], true);
  for (const n of ["pivot_root", "move_mount", "fsopen", "fsmount", "fspick"]) {
    add(n, [M1, 1, M1, 1, 0], false);
  }
  // io_uring, kernel objects, keyrings.
  add("io_uring_setup", [1, 1], true);
  add("io_uring_enter", [M1, 0, 0, 0, 0, 0], true);
  add("io_uring_register", [M1, 0, 0, 0], true);
  add("perf_event_open", [1, 0, M1, M1, 0], true);
  add("bpf", [0, 1, 0], false);
  add("userfaultfd", [M1], false);
  add("keyctl", [0x7fffffff, 0, 0, 0, 0], true);
  add("add_key", [1, 1, 0, 0, 0], true);
  add("request_key", [1, 1, 0, 0], true);
  // Other processes.
  add("ptrace", [3, 0, 0, 0], true);
  add("process_vm_readv", ["PID", 1, 1, 1, 1, 0], true);
  add("process_vm_writev", ["PID", 1, 1, 1, 1, 0], true);
  add("pidfd_getfd", [M1, 0, 0], true);
  add("process_madvise", [M1, 1, 1, 0, 0], true);
  // The machine (the kernel's own capability checks come first: no control).
  for (
    const n of [
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
      "syslog",
      "iopl",
      "ioperm",
      "uselib",
      "lookup_dcookie",
      "vhangup",
      "open_by_handle_at",
    ]
  ) add(n, [M1, 1, 1, 0, 0, 0], false);
  add("quotactl_fd", [M1, 0, 0, 0], true);
  add("name_to_handle_at", [M1, 1, 1, 1, 0], true);
  // A persona, terminal injection (also with high bits the kernel ignores), sockets.
  add("personality", [0xffffffff], true, "EPERM", "personality(query)");
  add("ioctl", [M1, 0x5412, 1], true, "EPERM", "ioctl(TIOCSTI)");
  add("ioctl", [M1, 0x541c, 1], true, "EPERM", "ioctl(TIOCLINUX)");
  add("ioctl", [M1, _HIGH | 0x5412n, 1], true, "EPERM", "ioctl(TIOCSTI | 1<<32)");
  add("socket", [40, 1, 0], true, "EPERM", "socket(AF_VSOCK)");
  add("socket", [_HIGH | 40n, 1, 0], true, "EPERM", "socket(AF_VSOCK | 1<<32)");
  add("socket", [17, 3, 0], false, "EPERM", "socket(AF_PACKET)");
  add("socketpair", [40, 1, 0, 1], true, "EPERM", "socketpair(AF_VSOCK)");
  // A foreign ABI: x32 (the kernel itself answers ENOSYS where x32 is off, never EPERM).
  if (t.x32Bit) {
    out.push({
      name: "x32 getpid",
      nr: (t.x32Bit | 39) >>> 0,
      args: [],
      want: "EPERM",
      reaches: true,
    });
  }
  // Syscalls newer than the filter's table (Linux 6.8 and 6.13): ENOSYS, whatever the kernel has.
  const newer = _kernelAtLeast(6, 13);
  out.push({
    name: "statmount (457)",
    nr: 457,
    args: ["1", "1", "0", "0"],
    want: "ENOSYS",
    reaches: newer,
  });
  out.push({
    name: "getxattrat (464)",
    nr: 464,
    args: [M1, "1", "0", "1", "1", "0"],
    want: "ENOSYS",
    reaches: newer,
  });
  return out;
}

function _kernelAtLeast(major: number, minor: number): boolean {
  const [a, b] = Deno.osRelease().split(".").map((x) => parseInt(x));
  return a > major || (a === major && b >= minor);
}

/** What probe.py printed. */
export interface ProbeResult {
  seccomp: string;
  calls: Array<{ name: string; ret: number; errno: number }>;
  controls: Record<string, string | number>;
}

/** Parse the probe's JSON line out of a tool's output. */
export function probeResult(text: string): ProbeResult {
  const line = text.split("\n").find((l) => l.startsWith('{"seccomp"'));
  assert.ok(line, `no probe output in: ${text.slice(0, 2000)}`);
  return JSON.parse(line);
}

/** Behind the filter: each call answers what the rules say; threads, fork and sockets work. */
export function assertFiltered(r: ProbeResult, cases: ProbeCase[], where: string): void {
  assert.equal(r.seccomp, "2", `${where}: Seccomp`);
  for (const c of cases) {
    const got = r.calls.find((x) => x.name === c.name)!;
    assert.equal(
      _ERRNO[got.errno] ?? `ret ${got.ret} errno ${got.errno}`,
      c.want,
      `${where}: ${c.name}`,
    );
  }
  assert.deepEqual(r.controls, {
    thread: "2",
    fork: "ok",
    subprocess: "2",
    unix: "ok",
    tcp: "ok",
    netlink: "ok",
    personality0: 0,
    tcgets: 9, // EBADF: the call reached the kernel
  }, `${where}: what programs need`);
}

/** Without the filter (the control): the same calls reach the kernel, which answers otherwise. */
export function assertUnfiltered(r: ProbeResult, cases: ProbeCase[], where: string): void {
  assert.equal(r.seccomp, "0", `${where}: Seccomp`);
  for (const c of cases.filter((c) => c.reaches)) {
    const got = r.calls.find((x) => x.name === c.name)!;
    assert.notEqual(
      _ERRNO[got.errno],
      c.want,
      `${where}: ${c.name} answered ${got.errno} without the filter too`,
    );
  }
}
