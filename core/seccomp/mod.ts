/**
 * The jail's second wall: a seccomp-bpf filter on every jailed process.
 *
 * - ./rules.ts: what is refused, and what each refusal answers (the one
 *   file to read);
 * - ./builder.ts: the rules compiled by libseccomp (python3-seccomp),
 *   outside any sandbox;
 * - ./bpf.ts and ./check_filter.ts: a classic-BPF interpreter, and the
 *   proof that a compiled filter does what the rules say;
 * - ./second_wall.ts: a filter kept in corral's cache, checked at start;
 * - ./wall.ts: each sandbox policy's second wall (on, off, missing).
 *
 * core/jail/namespace.ts (`seccompArgs`) and core/jail/launcher.ts
 * (`SECCOMP_ARG`) hand the filter to bwrap, which loads it right before the
 * namespace's first program.
 *
 * @module
 */
export { answerName, parseProgram, runProgram, type SeccompData, verdict } from "./bpf.ts";
export { type BuiltFilter, libRules, runBuilder, SYSTEM_PYTHON } from "./builder.ts";
export { checkedNames, filterProblems } from "./check_filter.ts";
export {
  CLONE_NEW_FLAGS,
  refusedSyscalls,
  SECCOMP_RULES,
  type SeccompRule,
  SOCKET_FAMILIES,
  USERNS_SYSCALLS,
} from "./rules.ts";
export {
  type JailFilter,
  jailFilter,
  processFilter,
  SeccompMissingError,
  type SecondWallOptions,
} from "./second_wall.ts";
export { ARCH_TABLES } from "./syscall_table.ts";
export { filtersDir, SecondWall, WALL_MISSING, type WallPolicy, type WallStatus } from "./wall.ts";
