/**
 * A classic-BPF interpreter for seccomp programs, as small as the kernel's
 * own rules allow: it runs a compiled filter over one `seccomp_data` (a
 * syscall number, the architecture, six arguments) and says what the
 * kernel would answer. ./check_filter.ts runs it over every rule of
 * ./rules.ts, so what the filter does is proven, not assumed.
 *
 * Only the instructions the kernel accepts in a seccomp filter are known
 * (kernel/seccomp.c `seccomp_check_filter`); any other one, a jump out of
 * the program, or a load past `seccomp_data` is an error, as it would be
 * when the kernel loads it.
 *
 * @module
 */

/** One instruction: `struct sock_filter`. */
export interface Insn {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

/** What the kernel hands a filter: `struct seccomp_data`. */
export interface SeccompData {
  nr: number;
  arch: number;
  /** Six arguments, each a 64-bit value. */
  args?: readonly bigint[];
  ip?: bigint;
}

/** `SECCOMP_RET_ALLOW`. */
export const RET_ALLOW = 0x7fff0000;
/** `SECCOMP_RET_ERRNO` (the errno in the low 16 bits). */
export const RET_ERRNO = 0x00050000;
/** The kernel's limit on a program's length (`BPF_MAXINSNS`). */
const _MAX_INSNS = 4096;
const _DATA_BYTES = 64;

/**
 * The instructions of a compiled program (`seccomp_export_bpf`'s bytes,
 * little-endian `struct sock_filter`s). Throws a RangeError for a size that
 * is no program.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseProgram } from "./bpf.ts";
 * const ret = new Uint8Array([6, 0, 0, 0, 0, 0, 0xff, 0x7f]); // ret ALLOW
 * assert.deepEqual(parseProgram(ret), [{ code: 6, jt: 0, jf: 0, k: 0x7fff0000 }]);
 * ```
 */
export function parseProgram(bytes: Uint8Array): Insn[] {
  if (bytes.length === 0 || bytes.length % 8 || bytes.length / 8 > _MAX_INSNS) {
    throw new RangeError(
      `a seccomp program is 1 to ${_MAX_INSNS} instructions of 8 bytes, ` +
        `not ${bytes.length} bytes`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Insn[] = [];
  for (let at = 0; at < bytes.length; at += 8) {
    out.push({
      code: view.getUint16(at, true),
      jt: view.getUint8(at + 2),
      jf: view.getUint8(at + 3),
      k: view.getUint32(at + 4, true),
    });
  }
  return out;
}

/**
 * Run one program over `data`: its 32-bit return value. Throws a
 * RangeError for what the kernel would refuse to load.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runProgram } from "./bpf.ts";
 * // ld nr; jeq 41 ? ret ERRNO(1) : ret ALLOW
 * const p = [
 *   { code: 0x20, jt: 0, jf: 0, k: 0 }, { code: 0x15, jt: 0, jf: 1, k: 41 },
 *   { code: 0x06, jt: 0, jf: 0, k: 0x50001 }, { code: 0x06, jt: 0, jf: 0, k: 0x7fff0000 },
 * ];
 * assert.equal(runProgram(p, { nr: 41, arch: 0 }), 0x50001);
 * assert.equal(runProgram(p, { nr: 0, arch: 0 }), 0x7fff0000);
 * ```
 */
export function runProgram(program: readonly Insn[], data: SeccompData): number {
  const words = _words(data);
  const mem = new Uint32Array(16);
  let a = 0, x = 0;
  for (let pc = 0; pc < program.length;) {
    const { code, jt, jf, k } = program[pc];
    switch (code & 0x07) {
      case 0x00: // LD
      case 0x01: { // LDX
        const v = _load(code, k, words, mem);
        if ((code & 0x07) === 0) a = v;
        else x = v;
        pc++;
        continue;
      }
      case 0x02: // ST
      case 0x03: // STX
        if (code !== 0x02 && code !== 0x03 || k > 15) throw _bad(pc, code);
        mem[k] = code === 0x02 ? a : x;
        pc++;
        continue;
      case 0x04:
        a = _alu(code, a, code & 0x08 ? x : k, pc);
        pc++;
        continue;
      case 0x05:
        pc = _jump(code, a, code & 0x08 ? x : k, pc, jt, jf, k);
        if (pc >= program.length) throw new RangeError(`a jump leaves the program`);
        continue;
      case 0x06:
        if (code === 0x06) return k >>> 0;
        if (code === 0x16) return a >>> 0;
        throw _bad(pc, code);
      case 0x07:
        if (code === 0x07) x = a;
        else if (code === 0x87) a = x;
        else throw _bad(pc, code);
        pc++;
        continue;
    }
  }
  throw new RangeError("the program ends without returning");
}

/**
 * What the kernel answers when `programs` are loaded in this order (bwrap
 * loads its `--add-seccomp-fd` programs in the order given): every one
 * runs, and the lowest action wins, the latest loaded first on a tie.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RET_ALLOW, verdict } from "./bpf.ts";
 * const ret = (k: number) => [{ code: 0x06, jt: 0, jf: 0, k }];
 * assert.equal(verdict([ret(RET_ALLOW), ret(0x50026)], { nr: 0, arch: 0 }), 0x50026);
 * ```
 */
export function verdict(programs: readonly (readonly Insn[])[], data: SeccompData): number {
  let ret = RET_ALLOW;
  for (let i = programs.length - 1; i >= 0; i--) {
    const cur = runProgram(programs[i], data);
    if (_actionOnly(cur) < _actionOnly(ret)) ret = cur;
  }
  return ret;
}

/**
 * An answer in words: `allow`, `EPERM`/`ENOSYS`/`errno N`, or the action's
 * name (a filter that kills, traps or traces).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { answerName } from "./bpf.ts";
 * assert.equal(answerName(0x50001), "EPERM");
 * assert.equal(answerName(0x7fff0000), "allow");
 * ```
 */
export function answerName(ret: number): string {
  const action = (ret & 0xffff0000) >>> 0;
  if (action === RET_ALLOW) return "allow";
  if (action === RET_ERRNO) {
    const errno = ret & 0xffff;
    return errno === 1 ? "EPERM" : errno === 38 ? "ENOSYS" : `errno ${errno}`;
  }
  const names: Record<number, string> = {
    0x80000000: "kill the process",
    0: "kill the thread",
    0x00030000: "trap",
    0x7fc00000: "notify",
    0x7ff00000: "trace",
    0x7ffc0000: "log",
  };
  return names[action] ?? `action 0x${action.toString(16)}`;
}

function _actionOnly(ret: number): number {
  return (ret & 0xffff0000) | 0; // signed, as the kernel compares them
}

function _words(d: SeccompData): Uint32Array {
  const w = new Uint32Array(_DATA_BYTES / 4);
  w[0] = d.nr >>> 0;
  w[1] = d.arch >>> 0;
  const ip = BigInt.asUintN(64, d.ip ?? 0n);
  w[2] = Number(ip & 0xffffffffn);
  w[3] = Number(ip >> 32n);
  for (let i = 0; i < 6; i++) {
    const v = BigInt.asUintN(64, d.args?.[i] ?? 0n);
    // Little-endian, as on x86_64 and aarch64: the low word first.
    w[4 + 2 * i] = Number(v & 0xffffffffn);
    w[5 + 2 * i] = Number(v >> 32n);
  }
  return w;
}

function _load(code: number, k: number, words: Uint32Array, mem: Uint32Array): number {
  switch (code) {
    case 0x20: // ld [k] (32-bit, absolute)
      if (k % 4 || k + 4 > _DATA_BYTES) throw new RangeError(`a load at ${k} leaves seccomp_data`);
      return words[k / 4];
    case 0x80: // ld len
    case 0x81: // ldx len
      return _DATA_BYTES;
    case 0x00: // ld #k
    case 0x01: // ldx #k
      return k >>> 0;
    case 0x60: // ld M[k]
    case 0x61: // ldx M[k]
      if (k > 15) throw new RangeError(`scratch memory ${k} does not exist`);
      return mem[k];
  }
  throw new RangeError(`instruction 0x${code.toString(16)} is not allowed in a seccomp filter`);
}

function _alu(code: number, a: number, v: number, pc: number): number {
  switch (code & 0xf0) {
    case 0x00:
      return (a + v) >>> 0;
    case 0x10:
      return (a - v) >>> 0;
    case 0x20:
      return Math.imul(a, v) >>> 0;
    case 0x30:
      if (v === 0) throw new RangeError("a division by zero");
      return Math.floor(a / v) >>> 0;
    case 0x40:
      return (a | v) >>> 0;
    case 0x50:
      return (a & v) >>> 0;
    case 0x60:
      return v >= 32 ? 0 : (a << v) >>> 0;
    case 0x70:
      return v >= 32 ? 0 : a >>> v;
    case 0x80:
      if (code !== 0x84) break;
      return (-a) >>> 0;
    case 0xa0:
      return (a ^ v) >>> 0;
  }
  throw _bad(pc, code);
}

function _jump(
  code: number,
  a: number,
  v: number,
  pc: number,
  jt: number,
  jf: number,
  k: number,
): number {
  a >>>= 0;
  v >>>= 0;
  switch (code & 0xf0) {
    case 0x00:
      if (code !== 0x05) break;
      return pc + 1 + k;
    case 0x10:
      return pc + 1 + (a === v ? jt : jf);
    case 0x20:
      return pc + 1 + (a > v ? jt : jf);
    case 0x30:
      return pc + 1 + (a >= v ? jt : jf);
    case 0x40:
      return pc + 1 + ((a & v) !== 0 ? jt : jf);
  }
  throw _bad(pc, code);
}

function _bad(pc: number, code: number): RangeError {
  return new RangeError(
    `instruction ${pc} (0x${code.toString(16)}) is not allowed in a seccomp filter`,
  );
}
