/**
 * Compiling the rules with libseccomp (Debian's `libseccomp2`, the library
 * Flatpak and systemd compile their filters with), through its Python
 * binding (`python3-seccomp`) run by the system's `/usr/bin/python3`:
 * outside any sandbox, once per rule set and exceptions, the result kept in
 * corral's cache (./second_wall.ts) and checked at every start
 * (./check_filter.ts). The builder is the script below, so a compiled
 * corral binary carries it; it reads its rules on stdin as JSON.
 *
 * Two programs come out, loaded one after the other (bwrap
 * `--add-seccomp-fd`): `known` answers `ENOSYS` to every syscall number
 * libseccomp's table does not know and allows the others; `refuse` holds
 * the rules. The kernel runs both and the lowest answer wins, so a refused
 * call is refused and an unknown one is `ENOSYS`. One libseccomp program
 * cannot say both: its rules cannot hold a conditional refusal under an
 * allow-list. Both refuse a foreign ABI (`EPERM`), x32 included.
 *
 * @module
 */
import { type ArgCondition, type SeccompRule } from "./rules.ts";

/** One libseccomp rule: a syscall, the errno it answers, its argument comparisons (ANDed). */
export interface LibRule {
  syscall: string;
  errno: number;
  args: Array<{ arg: number; op: "EQ" | "NE" | "GT" | "MASKED_EQ"; mask?: string; value: string }>;
}

/** What the builder made: both programs and the table it made them with. */
export interface BuiltFilter {
  /** Allows what libseccomp's table knows; `ENOSYS` for the rest. */
  known: Uint8Array;
  /** The rules: refusals. */
  refuse: Uint8Array;
  /** Every syscall number libseccomp's table knows on this architecture. */
  table: number[];
  /** The number libseccomp gave each name (`null`: not on this architecture). */
  names: Record<string, number | null>;
}

/** The errno numbers of an answer. */
export const ERRNO = { EPERM: 1, ENOSYS: 38 } as const;

/** The Python interpreter that holds Debian's `python3-seccomp` (never a virtual env's). */
export const SYSTEM_PYTHON = "/usr/bin/python3";

const _BUILDER = `
import base64, errno, json, sys, tempfile
try:
    import seccomp as s
except ImportError as e:
    sys.exit("libseccomp's Python binding is missing (" + str(e) + ")")
req = json.load(sys.stdin)
arch = {"x86_64": s.Arch.X86_64, "aarch64": s.Arch.AARCH64}[req["arch"]]
def new(default):
    f = s.SyscallFilter(default)
    if arch & 0xffffffff != s.system_arch() & 0xffffffff:
        f.add_arch(arch)
        f.remove_arch(s.Arch.NATIVE)
    f.set_attr(s.Attr.ACT_BADARCH, s.ERRNO(errno.EPERM))
    return f
def number(name):
    try:
        n = s.resolve_syscall(arch, name)
    except ValueError:
        return None
    return n if n >= 0 else None
def out(f):
    t = tempfile.TemporaryFile()
    f.export_bpf(t)
    t.seek(0)
    return base64.b64encode(t.read()).decode()
# Rules name their syscalls: libseccomp reads a bare number as the native architecture's.
table = {}
for nr in range(0, 1024):
    try:
        table[nr] = s.resolve_syscall(arch, nr).decode()
    except ValueError:
        continue
known = new(s.ERRNO(errno.ENOSYS))
known.set_attr(s.Attr.CTL_OPTIMIZE, 2)
for name in table.values():
    known.add_rule(s.ALLOW, name)
refuse = new(s.ALLOW)
ops = {"EQ": s.EQ, "NE": s.NE, "GT": s.GT, "MASKED_EQ": s.MASKED_EQ}
for r in req["rules"]:
    if number(r["syscall"]) is None:
        continue
    args = [s.Arg(a["arg"], ops[a["op"]], int(a.get("mask", a["value"])), int(a["value"]))
            if a["op"] == "MASKED_EQ" else s.Arg(a["arg"], ops[a["op"]], int(a["value"]))
            for a in r["args"]]
    refuse.add_rule(s.ERRNO(r["errno"]), r["syscall"], *args)
names = {n: number(n) for n in req["names"]}
json.dump({"known": out(known), "refuse": out(refuse), "table": list(table), "names": names},
          sys.stdout)
`;

/** The builder's own text (part of a filter's cache key). */
export const BUILDER_SOURCE = _BUILDER;

/**
 * The libseccomp rules of `rules`, without the syscalls in `except`: one
 * rule per refused call, and per condition what libseccomp can say of it
 * (one comparison per argument in a rule, rules of a syscall ORed).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { libRules } from "./builder.ts";
 * const rules = libRules([{ group: "g", syscalls: ["socket"], answer: "EPERM", why: "",
 *   when: { arg: 0, onlyIn: [1, 2] } }], []);
 * assert.deepEqual(rules.map((r) => r.args[0]), [
 *   { arg: 0, op: "EQ", value: "0" }, { arg: 0, op: "GT", value: "2" },
 * ]);
 * ```
 */
export function libRules(rules: readonly SeccompRule[], except: readonly string[]): LibRule[] {
  const out: LibRule[] = [];
  for (const rule of rules) {
    for (const syscall of rule.syscalls) {
      if (except.includes(syscall)) continue;
      const errno = ERRNO[rule.answer];
      for (const args of _comparisons(rule.when)) out.push({ syscall, errno, args });
    }
  }
  return out;
}

/** Each alternative (ORed) of a condition, as the comparisons of one rule. */
function _comparisons(when: ArgCondition | undefined): LibRule["args"][] {
  if (!when) return [[]];
  const { arg } = when;
  if ("anyBit" in when) {
    const bits = [...Array(64).keys()].map((i) => 1n << BigInt(i))
      .filter((b) => (BigInt(when.anyBit) & b) !== 0n);
    return bits.map((b) => [{ arg, op: "MASKED_EQ", mask: `${b}`, value: `${b}` }]);
  }
  if ("low32" in when) {
    return when.low32.map((v) => [{ arg, op: "MASKED_EQ", mask: "4294967295", value: `${v}` }]);
  }
  // Refused unless one of `onlyIn`: each value of the gaps between them, then above the last.
  const allowed = [...new Set(when.onlyIn)].sort((a, b) => a - b);
  const out: LibRule["args"][] = [];
  let from = 0;
  for (const v of allowed) {
    if (v - from > 64) throw new RangeError(`a gap of ${v - from} values is too wide to list`);
    for (let x = from; x < v; x++) out.push([{ arg, op: "EQ", value: `${x}` }]);
    from = v + 1;
  }
  out.push([{ arg, op: "GT", value: `${allowed.at(-1)}` }]);
  return out;
}

/**
 * Run the builder: both programs for `arch`, with `rules`; `names` are the
 * syscalls whose numbers it reports. Throws an Error saying what is
 * missing (the interpreter, the binding) or what libseccomp refused.
 */
export async function runBuilder(
  arch: string,
  rules: readonly LibRule[],
  names: readonly string[],
  python = SYSTEM_PYTHON,
): Promise<BuiltFilter> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(python, {
      // -I: no user site, no PYTHON* variables, no current folder on the path.
      args: ["-I", "-c", _BUILDER],
      clearEnv: true,
      env: { LANG: "C.UTF-8" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (err) {
    throw new Error(
      `${python} cannot be run (${
        (err as Error).message.split("\n")[0]
      }): the filter is compiled ` +
        `with Debian's python3 and python3-seccomp (apt-get install python3-seccomp)`,
    );
  }
  const w = child.stdin.getWriter();
  try {
    await w.write(new TextEncoder().encode(JSON.stringify({ arch, rules, names })));
    await w.close();
  } catch { /* it stopped before reading: its exit says why */ }
  const out = await child.output();
  if (!out.success) {
    const why = new TextDecoder().decode(out.stderr).trim().split("\n").at(-1) ?? "";
    throw new Error(
      `libseccomp could not compile it (${why || `exit ${out.code}`}): install python3-seccomp ` +
        `(apt-get install python3-seccomp)`,
    );
  }
  const r = JSON.parse(new TextDecoder().decode(out.stdout));
  const bytes = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return { known: bytes(r.known), refuse: bytes(r.refuse), table: r.table, names: r.names };
}
