// What libseccomp compiles from core/seccomp/rules.ts is decoded back, by
// running it in the interpreter, and compared with the rules: the refused
// list, the conditions, unknown numbers, the x32 bit and foreign
// architectures. A program changed in one place, or one that refuses less,
// is caught. Needs /usr/bin/python3 with python3-seccomp (.ci/run installs it).
import assert from "node:assert/strict";
import { answerName, parseProgram, verdict } from "./bpf.ts";
import { type BuiltFilter, libRules, runBuilder } from "./builder.ts";
import { checkedNames, filterProblems } from "./check_filter.ts";
import { refusedSyscalls, SECCOMP_RULES } from "./rules.ts";
import { ARCH_TABLES } from "./syscall_table.ts";

const _built = new Map<string, Promise<BuiltFilter>>();
function build(arch: string, except: string[] = []): Promise<BuiltFilter> {
  const key = `${arch}:${except.join(",")}`;
  if (!_built.has(key)) {
    _built.set(key, runBuilder(arch, libRules(SECCOMP_RULES, except), checkedNames(arch)));
  }
  return _built.get(key)!;
}

/** The syscalls a filter refuses whatever their arguments, decoded by running it. */
function decodeRefused(b: BuiltFilter, arch: string): Map<string, string> {
  const t = ARCH_TABLES[arch];
  const programs = [parseProgram(b.known), parseProgram(b.refuse)];
  const out = new Map<string, string>();
  for (const [name, nr] of Object.entries(t.numbers)) {
    const answers = [0n, 1n, 2n, 0xffffffffffffffffn, 3n].map((v) =>
      answerName(verdict(programs, { nr, arch: t.audit, args: [v, v, v, v, v, v] }))
    );
    if (answers.every((a) => a === answers[0] && a !== "allow")) out.set(name, answers[0]);
  }
  return out;
}

for (const arch of Object.keys(ARCH_TABLES)) {
  Deno.test(`${arch}: the compiled filter refuses exactly the rule file's calls, with its answers`, async () => {
    const b = await build(arch);
    assert.deepEqual(filterProblems(b, [], arch), []);
    const unconditional = new Map<string, string>();
    for (const r of SECCOMP_RULES) {
      for (const s of r.syscalls) {
        if (!r.when && s in ARCH_TABLES[arch].numbers) unconditional.set(s, r.answer);
      }
    }
    // socket(AF_VSOCK) and personality(8) are refused too, but not whatever the arguments.
    assert.deepEqual(
      [...decodeRefused(b, arch)].sort(),
      [...unconditional].sort(),
      "decoded from the program",
    );
    // libseccomp's table: what every program needs is known, newer numbers are not.
    assert.ok(b.table.length > 250, `${b.table.length} syscalls known`);
    assert.ok(Math.max(...b.table) < 1024);
  });

  Deno.test(`${arch}: a granted syscall is let through, and only that one`, async () => {
    const b = await build(arch, ["unshare", "socket"]);
    assert.deepEqual(filterProblems(b, ["unshare", "socket"], arch), []);
    const refused = decodeRefused(b, arch);
    assert.ok(!refused.has("unshare") && refused.get("setns") === "EPERM");
    // The filter without the grant is not the filter with it.
    assert.ok(filterProblems(await build(arch), ["unshare", "socket"], arch).length > 0);
    assert.ok(filterProblems(b, [], arch).some((p) => p.startsWith("unshare(")));
  });
}

Deno.test("a program changed in one place, or one that refuses less, is caught", async () => {
  const arch = "x86_64";
  const b = await build(arch);
  // Every constant compare against the ioctl request TIOCSTI, changed to another value.
  const refuse = b.refuse.slice();
  const view = new DataView(refuse.buffer);
  let changed = 0;
  for (let at = 0; at < refuse.length; at += 8) {
    if (view.getUint32(at + 4, true) === 0x5412) {
      view.setUint32(at + 4, 0x5413, true);
      changed++;
    }
  }
  assert.ok(changed > 0, "the program compares the request with TIOCSTI");
  assert.ok(filterProblems({ ...b, refuse }, [], arch).some((p) => p.startsWith("ioctl(0x5412)")));
  // A deny-list alone: numbers the filter does not know pass (a newer kernel's syscalls).
  const allowAll = new Uint8Array([6, 0, 0, 0, 0, 0, 0xff, 0x7f]);
  const denyOnly = filterProblems({ ...b, known: allowAll }, [], arch);
  assert.ok(
    denyOnly.some((p) => /^syscall \d+ \(unknown to the filter\): allow, not ENOSYS/.test(p)),
  );
  // A filter that kills instead of answering.
  const kill = new Uint8Array([6, 0, 0, 0, 0, 0, 0, 0]);
  assert.ok(
    filterProblems({ ...b, refuse: kill }, [], arch).some((p) => /kill the thread/.test(p)),
  );
  // libseccomp numbering a syscall differently from the kernel's table.
  const names = { ...b.names, ptrace: 999 };
  assert.ok(filterProblems({ ...b, names }, [], arch).some((p) => /ptrace 999/.test(p)));
  // Bytes that are no program.
  assert.match(
    filterProblems({ ...b, known: new Uint8Array(7) }, [], arch)[0],
    /no seccomp program/,
  );
  // An architecture corral has no table for.
  assert.match(filterProblems(b, [], "riscv64")[0], /no syscall table for riscv64/);
});

Deno.test("every refused name is in corral's table for x86_64, and libseccomp knows it", async () => {
  const b = await build("x86_64");
  for (const name of refusedSyscalls()) {
    assert.equal(typeof ARCH_TABLES.x86_64.numbers[name], "number", name);
    assert.equal(b.names[name], ARCH_TABLES.x86_64.numbers[name], name);
  }
});
