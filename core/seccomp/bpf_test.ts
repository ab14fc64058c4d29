// The classic-BPF interpreter runs programs as the kernel does: loads from
// seccomp_data (little-endian words), every jump and ALU operation the kernel
// accepts, the lowest action across stacked filters, and refuses what the
// kernel would refuse to load.
import assert from "node:assert/strict";
import { answerName, type Insn, parseProgram, RET_ALLOW, runProgram, verdict } from "./bpf.ts";

const i = (code: number, k = 0, jt = 0, jf = 0): Insn => ({ code, jt, jf, k });
const RET = (k: number) => i(0x06, k);
const LD = (offset: number) => i(0x20, offset);

Deno.test("loads read seccomp_data: nr, arch, and each argument's low and high words", () => {
  const data = { nr: 41, arch: 0xc000003e, args: [0x1_0000_0002n, 0n, 0n, 0n, 0n, 0xabcdn] };
  // ret A after each load: the loaded word comes back as the answer.
  const loadAt = (offset: number) => runProgram([LD(offset), i(0x16)], data);
  assert.equal(loadAt(0), 41);
  assert.equal(loadAt(4), 0xc000003e);
  assert.equal(loadAt(16), 2); // args[0] low word
  assert.equal(loadAt(20), 1); // args[0] high word
  assert.equal(loadAt(56), 0xabcd); // args[5] low word
  assert.throws(() => loadAt(64), RangeError); // past seccomp_data
  assert.throws(() => loadAt(2), RangeError); // not a word
  assert.equal(runProgram([LD(0), i(0x16)], { nr: -1, arch: 0 }), 0xffffffff);
});

Deno.test("jumps compare A with k or X, unsigned, and skip jt or jf instructions", () => {
  // ld nr; jgt 10 ? next : skip 1; ret 1; ret 2
  const gt = [LD(0), i(0x25, 10, 0, 1), RET(1), RET(2)];
  assert.equal(runProgram(gt, { nr: 11, arch: 0 }), 1);
  assert.equal(runProgram(gt, { nr: 10, arch: 0 }), 2);
  assert.equal(runProgram(gt, { nr: -1, arch: 0 }), 1); // 0xffffffff, unsigned
  const ge = [LD(0), i(0x35, 10, 0, 1), RET(1), RET(2)];
  assert.equal(runProgram(ge, { nr: 10, arch: 0 }), 1);
  const set = [LD(16), i(0x45, 0x10000000, 0, 1), RET(1), RET(2)];
  assert.equal(runProgram(set, { nr: 0, arch: 0, args: [0x10000011n] }), 1);
  assert.equal(runProgram(set, { nr: 0, arch: 0, args: [0x11n] }), 2);
  // X as the operand: ldx #5; ld nr; jeq x
  const x = [i(0x01, 5), LD(0), i(0x1d, 0, 0, 1), RET(1), RET(2)];
  assert.equal(runProgram(x, { nr: 5, arch: 0 }), 1);
  assert.equal(runProgram(x, { nr: 6, arch: 0 }), 2);
  // ja skips forward
  assert.equal(runProgram([i(0x05, 1), RET(1), RET(2)], { nr: 0, arch: 0 }), 2);
  assert.throws(() => runProgram([i(0x05, 5), RET(1)], { nr: 0, arch: 0 }), /leaves the program/);
});

Deno.test("ALU operations, scratch memory and TAX/TXA compute as the kernel does", () => {
  const d = { nr: 0x1234, arch: 0 };
  const alu = (code: number, k: number) => runProgram([LD(0), i(code, k), i(0x16)], d);
  assert.equal(alu(0x04, 1), 0x1235); // add
  assert.equal(alu(0x14, 0x1235), 0xffffffff); // sub wraps
  assert.equal(alu(0x24, 2), 0x2468); // mul
  assert.equal(alu(0x34, 0x10), 0x123); // div
  assert.equal(alu(0x44, 0x1), 0x1235); // or
  assert.equal(alu(0x54, 0xff), 0x34); // and
  assert.equal(alu(0x64, 4), 0x12340); // lsh
  assert.equal(alu(0x74, 4), 0x123); // rsh
  assert.equal(alu(0xa4, 0xffff), 0xedcb); // xor
  assert.equal(runProgram([LD(0), i(0x84), i(0x16)], { nr: 1, arch: 0 }), 0xffffffff); // neg
  assert.throws(() => alu(0x34, 0), /division by zero/);
  assert.throws(() => alu(0x94, 3), /not allowed/); // mod: not a seccomp instruction
  // st M[3]; ld #0; ld M[3]; tax; txa; ret a
  const mem = [LD(0), i(0x02, 3), i(0x00, 0), i(0x60, 3), i(0x07), i(0x00, 0), i(0x87), i(0x16)];
  assert.equal(runProgram(mem, d), 0x1234);
  assert.equal(runProgram([i(0x80), i(0x16)], d), 64); // ld len
});

Deno.test("what the kernel would not load is an error, never an answer", () => {
  assert.throws(() => runProgram([LD(0)], { nr: 0, arch: 0 }), /ends without returning/);
  assert.throws(() => runProgram([i(0x28, 0), RET(0)], { nr: 0, arch: 0 }), /not allowed/); // ld h
  assert.throws(() => runProgram([i(0x30, 0), RET(0)], { nr: 0, arch: 0 }), /not allowed/); // ld b
  assert.throws(() => parseProgram(new Uint8Array(12)), RangeError);
  assert.throws(() => parseProgram(new Uint8Array(0)), RangeError);
  assert.throws(() => parseProgram(new Uint8Array(8 * 4097)), RangeError);
});

Deno.test("stacked filters: the lowest action wins, the latest loaded on a tie", () => {
  const data = { nr: 0, arch: 0 };
  const eperm = [RET(0x50001)], enosys = [RET(0x50026)], allow = [RET(RET_ALLOW)];
  assert.equal(verdict([allow, eperm], data), 0x50001);
  assert.equal(verdict([enosys, allow], data), 0x50026);
  assert.equal(verdict([enosys, eperm], data), 0x50001); // a tie: the later filter's errno
  assert.equal(verdict([eperm, enosys], data), 0x50026);
  assert.equal(verdict([allow, [RET(0)]], data), 0); // kill the thread beats errno and allow
  assert.equal(verdict([[RET(0x80000000)], eperm], data), 0x80000000); // kill the process: lowest
  assert.equal(answerName(0x80000000), "kill the process");
  assert.equal(answerName(0x50026), "ENOSYS");
  assert.equal(answerName(0x5000d), "errno 13");
});
