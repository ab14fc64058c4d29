/**
 * The proof that a compiled filter says what ./rules.ts says: both programs
 * run in ./bpf.ts's interpreter, as the kernel runs them, over every rule
 * (each refused call with arguments that must be refused and, for a
 * condition, arguments that must pass), every syscall number up to 1023
 * (known: allowed; unknown: `ENOSYS`), the x32 bit and a foreign
 * architecture (refused), and the calls every program needs (allowed).
 * The numbers come from corral's own table (./syscall_table.ts), checked
 * against libseccomp's. Run at start on a new filter (./second_wall.ts)
 * and in tests.
 *
 * @module
 */
import { answerName, type Insn, parseProgram, type SeccompData, verdict } from "./bpf.ts";
import type { BuiltFilter } from "./builder.ts";
import { refusedSyscalls, SECCOMP_RULES, type SeccompRule } from "./rules.ts";
import { ARCH_TABLES, type ArchTable, ESSENTIAL_SYSCALLS } from "./syscall_table.ts";

/** Threads: `CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID`. */
const _THREAD_FLAGS = 0x3d0f00n;
const _SIGCHLD = 17n;
const _ONES = 0xffffffffffffffffn;
const _HIGH = 0xffffffff00000000n;
const _MAX_PROBLEMS = 12;

/** What a filter must answer for one `seccomp_data`. */
interface _Case {
  what: string;
  data: SeccompData;
  /** `allow`, an errno name, or `refused` (any errno). */
  want: string;
}

/**
 * What is wrong with `built` as the filter of ./rules.ts on `arch` with the
 * syscalls `except` granted: one sentence per problem, none when it holds.
 *
 * @example
 * ```ts ignore
 * const built = await runBuilder("x86_64", libRules(SECCOMP_RULES, []), checkedNames("x86_64"));
 * assert.deepEqual(filterProblems(built, [], "x86_64"), []);
 * ```
 */
export function filterProblems(
  built: BuiltFilter,
  except: readonly string[],
  arch: string,
): string[] {
  const table = ARCH_TABLES[arch];
  if (!table) return [`corral has no syscall table for ${arch}`];
  let programs: Insn[][];
  try {
    programs = [parseProgram(built.known), parseProgram(built.refuse)];
  } catch (err) {
    return [`it is no seccomp program: ${(err as Error).message}`];
  }
  const problems = _numbers(built, table);
  try {
    for (const c of _cases(built, except, table)) {
      const got = answerName(verdict(programs, c.data));
      const ok = c.want === "refused" ? got === "EPERM" || got === "ENOSYS" : got === c.want;
      if (!ok) problems.push(`${c.what}: ${got}, not ${c.want}`);
      if (problems.length >= _MAX_PROBLEMS) break;
    }
  } catch (err) {
    problems.push(`it cannot run: ${(err as Error).message}`);
  }
  return problems;
}

/**
 * The syscall names whose numbers the builder reports for `arch`: every one
 * corral's table holds.
 */
export function checkedNames(arch: string): string[] {
  return Object.keys(ARCH_TABLES[arch]?.numbers ?? {});
}

/** libseccomp's numbers against corral's, and a table that holds what programs need. */
function _numbers(built: BuiltFilter, table: ArchTable): string[] {
  const out: string[] = [];
  for (const [name, nr] of Object.entries(table.numbers)) {
    const theirs = built.names[name] ?? null;
    if (theirs !== nr) out.push(`libseccomp numbers ${name} ${theirs}, the kernel's table ${nr}`);
  }
  for (const name of refusedSyscalls()) {
    if (!(name in table.numbers) && built.names[name] != null) {
      out.push(`libseccomp knows ${name} (${built.names[name]}), corral's table does not`);
    }
  }
  const missing = ESSENTIAL_SYSCALLS.filter((n) => !built.table.includes(table.numbers[n]));
  if (missing.length) out.push(`libseccomp's table lacks ${missing.join(", ")}`);
  return out;
}

function* _cases(built: BuiltFilter, except: readonly string[], t: ArchTable): Generator<_Case> {
  const ruled = new Set<number>();
  for (const rule of SECCOMP_RULES) {
    for (const name of rule.syscalls) {
      const nr = t.numbers[name];
      if (nr === undefined) continue;
      ruled.add(nr);
      yield* _ruleCases(rule, name, nr, except.includes(name), t.audit);
    }
  }
  // Every other number: allowed when libseccomp's table knows it, else ENOSYS (a newer kernel's).
  const known = new Set(built.table);
  for (let nr = 0; nr < 1024; nr++) {
    if (ruled.has(nr)) continue;
    yield {
      what: `syscall ${nr}${known.has(nr) ? "" : " (unknown to the filter)"}`,
      data: { nr, arch: t.audit, args: [0n, 0n, 0n, 0n, 0n, 0n] },
      want: known.has(nr) ? "allow" : "ENOSYS",
    };
  }
  for (const name of ESSENTIAL_SYSCALLS) {
    yield { what: name, data: { nr: t.numbers[name], arch: t.audit }, want: "allow" };
  }
  // A foreign ABI: the x32 bit, another architecture, any number.
  const sample = [0, 1, 41, 56, 59, 97, 220, 272, 425, 1000];
  for (const nr of sample) {
    if (t.x32Bit) {
      yield {
        what: `x32 syscall ${nr}`,
        data: { nr: (nr | t.x32Bit) >>> 0, arch: t.audit },
        want: "refused",
      };
    }
    for (const arch of [...t.foreign, ..._otherArches(t)]) {
      yield {
        what: `syscall ${nr} of arch 0x${arch.toString(16)}`,
        data: { nr, arch },
        want: "refused",
      };
    }
  }
  yield { what: "syscall -1", data: { nr: -1, arch: t.audit }, want: "refused" };
}

function _otherArches(t: ArchTable): number[] {
  return Object.values(ARCH_TABLES).map((a) => a.audit).filter((a) => a !== t.audit);
}

/** One rule's cases: what it refuses and, for a condition, what it lets pass. */
function* _ruleCases(
  rule: SeccompRule,
  name: string,
  nr: number,
  excepted: boolean,
  arch: number,
): Generator<_Case> {
  const refused = excepted ? "allow" : rule.answer;
  const at = (arg: number, v: bigint, rest: bigint): bigint[] =>
    [0, 1, 2, 3, 4, 5].map((i) => i === arg ? BigInt.asUintN(64, v) : rest);
  const c = (what: string, args: bigint[], want: string): _Case => ({
    what: `${name}(${what})${excepted ? " (granted)" : ""}`,
    data: { nr, arch, args },
    want,
  });
  const when = rule.when;
  if (!when) {
    for (const rest of [0n, _ONES, 3n]) yield c(`args ${rest}`, at(0, rest, rest), refused);
    return;
  }
  for (const rest of [0n, _ONES]) {
    if ("anyBit" in when) {
      for (let b = 0n; b < 64n; b++) {
        const bit = 1n << b;
        if ((BigInt(when.anyBit) & bit) === 0n) continue;
        yield c(`0x${(bit | _SIGCHLD).toString(16)}`, at(when.arg, bit | _SIGCHLD, rest), refused);
        yield c(
          `0x${(bit | _THREAD_FLAGS).toString(16)}`,
          at(when.arg, bit | _THREAD_FLAGS, rest),
          refused,
        );
      }
      for (const ok of [0n, _SIGCHLD, _THREAD_FLAGS]) {
        yield c(`0x${ok.toString(16)}`, at(when.arg, ok, rest), "allow");
      }
    } else if ("low32" in when) {
      const set = when.low32.map(BigInt);
      for (const v of set) {
        for (const high of [0n, 1n << 32n, _HIGH]) {
          yield c(`0x${(v | high).toString(16)}`, at(when.arg, v | high, rest), refused);
        }
      }
      for (const ok of [0n, 0x5401n, 0x5421n, ...set.map((v) => v + 1n)]) {
        if (!set.includes(ok)) yield c(`0x${ok.toString(16)}`, at(when.arg, ok, rest), "allow");
      }
    } else {
      const set = when.onlyIn.map(BigInt);
      const top = set.reduce((a, b) => (a > b ? a : b), 0n);
      const values = [...Array(Number(top) + 48).keys()].map(BigInt);
      for (const v of [...values, 1n << 31n, 0xffffffffn, _HIGH, (1n << 32n) | 40n, _ONES]) {
        const inSet = set.includes(v & 0xffffffffn);
        // High bits over an allowed value: either answer is safe (the filter may refuse more).
        if (inSet && v > 0xffffffffn) continue;
        yield c(`${v}`, at(when.arg, v, rest), inSet ? "allow" : refused);
      }
    }
  }
}
