/**
 * corral's own syscall numbers, independent of libseccomp's: every syscall
 * ./rules.ts names and the ones every program needs, per architecture
 * (from the kernel's tables: arch/x86/entry/syscalls/syscall_64.tbl and
 * include/uapi/asm-generic/unistd.h). ./check_filter.ts runs the compiled
 * filter on these numbers, so a libseccomp whose table disagrees, or a
 * filter compiled for another machine, is caught at start. A name absent
 * from an architecture's table does not exist there (`iopl` on aarch64).
 *
 * @module
 */

/** One architecture: its `AUDIT_ARCH_*` value, the arch a foreign ABI comes as, its numbers. */
export interface ArchTable {
  /** `AUDIT_ARCH_*`, as `seccomp_data.arch` holds it. */
  audit: number;
  /** Foreign ABIs this kernel runs (`AUDIT_ARCH_I386` on x86_64): all refused. */
  foreign: readonly number[];
  /** x86_64's x32 ABI: its syscalls carry this bit (refused). */
  x32Bit?: number;
  /** Syscall numbers by name. */
  numbers: Readonly<Record<string, number>>;
}

/** The syscalls that must stay allowed for any program to run (the checks' controls). */
// deno-fmt-ignore
export const ESSENTIAL_SYSCALLS: readonly string[] = [
  "read", "write", "openat", "close", "mmap", "mprotect", "munmap", "brk", "execve", "exit",
  "exit_group", "futex", "wait4", "connect", "bind", "listen", "accept4", "sendto", "recvfrom",
  "fstat", "newfstatat", "statx", "getdents64", "pipe2", "dup3", "fcntl", "rt_sigaction",
  "rt_sigprocmask", "sched_yield", "getpid", "gettid", "tgkill", "prctl", "set_tid_address",
  "set_robust_list", "rseq", "prlimit64", "getrandom", "epoll_create1", "epoll_ctl", "epoll_pwait",
  "eventfd2", "madvise", "seccomp", "landlock_create_ruleset",
];

/** The architectures corral's filter knows, by `Deno.build.arch`. */
// deno-fmt-ignore
export const ARCH_TABLES: Readonly<Record<string, ArchTable>> = {
  x86_64: {
    audit: 0xc000003e,
    foreign: [0x40000003], // AUDIT_ARCH_I386 (int 0x80)
    x32Bit: 0x40000000,
    numbers: {
      unshare: 272, setns: 308, clone: 56, clone3: 435, mount: 165, umount2: 166, pivot_root: 155,
      open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433,
      mount_setattr: 442, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
      bpf: 321, perf_event_open: 298, userfaultfd: 323, keyctl: 250, add_key: 248,
      request_key: 249, ptrace: 101, process_vm_readv: 310, process_vm_writev: 311,
      pidfd_getfd: 438, process_madvise: 440, kexec_load: 246, kexec_file_load: 320,
      init_module: 175, finit_module: 313, delete_module: 176, reboot: 169, swapon: 167,
      swapoff: 168, acct: 163, quotactl: 179, quotactl_fd: 443, syslog: 103, iopl: 172,
      ioperm: 173, uselib: 134, lookup_dcookie: 212, vhangup: 153, open_by_handle_at: 304,
      name_to_handle_at: 303, personality: 135, ioctl: 16, socket: 41, socketpair: 53, read: 0,
      write: 1, openat: 257, close: 3, mmap: 9, mprotect: 10, munmap: 11, brk: 12, execve: 59,
      exit: 60, exit_group: 231, futex: 202, wait4: 61, connect: 42, bind: 49, listen: 50,
      accept4: 288, sendto: 44, recvfrom: 45, fstat: 5, newfstatat: 262, statx: 332,
      getdents64: 217, pipe2: 293, dup3: 292, fcntl: 72, rt_sigaction: 13, rt_sigprocmask: 14,
      sched_yield: 24, getpid: 39, gettid: 186, tgkill: 234, prctl: 157, set_tid_address: 218,
      set_robust_list: 273, rseq: 334, prlimit64: 302, getrandom: 318, epoll_create1: 291,
      epoll_ctl: 233, epoll_pwait: 281, eventfd2: 290, madvise: 28, seccomp: 317,
      landlock_create_ruleset: 444,
    },
  },
  aarch64: {
    audit: 0xc00000b7,
    foreign: [0x40000028], // AUDIT_ARCH_ARM (compat 32-bit)
    numbers: {
      unshare: 97, setns: 268, clone: 220, clone3: 435, mount: 40, umount2: 39, pivot_root: 41,
      open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433,
      mount_setattr: 442, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427,
      bpf: 280, perf_event_open: 241, userfaultfd: 282, keyctl: 219, add_key: 217,
      request_key: 218, ptrace: 117, process_vm_readv: 270, process_vm_writev: 271,
      pidfd_getfd: 438, process_madvise: 440, kexec_load: 104, kexec_file_load: 294,
      init_module: 105, finit_module: 273, delete_module: 106, reboot: 142, swapon: 224,
      swapoff: 225, acct: 89, quotactl: 60, quotactl_fd: 443, syslog: 116, lookup_dcookie: 18,
      vhangup: 58, open_by_handle_at: 265, name_to_handle_at: 264, personality: 92, ioctl: 29,
      socket: 198, socketpair: 199, read: 63, write: 64, openat: 56, close: 57, mmap: 222,
      mprotect: 226, munmap: 215, brk: 214, execve: 221, exit: 93, exit_group: 94, futex: 98,
      wait4: 260, connect: 203, bind: 200, listen: 201, accept4: 242, sendto: 206, recvfrom: 207,
      fstat: 80, newfstatat: 79, statx: 291, getdents64: 61, pipe2: 59, dup3: 24, fcntl: 25,
      rt_sigaction: 134, rt_sigprocmask: 135, sched_yield: 124, getpid: 172, gettid: 178,
      tgkill: 131, prctl: 167, set_tid_address: 96, set_robust_list: 99, rseq: 293, prlimit64: 261,
      getrandom: 278, epoll_create1: 20, epoll_ctl: 21, epoll_pwait: 22, eventfd2: 19,
      madvise: 233, seccomp: 277, landlock_create_ruleset: 444,
    },
  },
};
