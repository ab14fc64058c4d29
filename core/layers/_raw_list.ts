/**
 * Listing a folder of the tree or of a layer as the file system holds it,
 * names as bytes: Deno's `readDir` turns a name that is not UTF-8 into a
 * lossy string that no Deno call can open again, so such names would be
 * lost. GNU find (`-printf … %P\0`) reads them for corral; a name that is
 * not UTF-8 is kept escaped (`bad\xff.txt`) for the change list and the
 * audit, and marked, so that it is refused or kept, never lost.
 *
 * @module
 */

/** What find says an entry is (`%y`): file, folder, link, char device, … */
export type RawType = "f" | "d" | "l" | "c" | "b" | "p" | "s" | "?";

/** One entry listed by {@link listRaw}. */
export interface RawEntry {
  /** Relative to the listed folder, `/`-separated (`""` for the folder itself); escaped when not UTF-8. */
  rel: string;
  /** Whether every byte of `rel` is UTF-8 (else it is for showing only: nothing can open it). */
  utf8: boolean;
  type: RawType;
  ino: number;
  size: number;
  /** Modification and change times, in milliseconds (as Deno's `lstat` gives them). */
  mtimeMs: number;
  ctimeMs: number;
  /** Permission bits, setuid, setgid and sticky included. */
  mode: number;
}

/**
 * Every entry of `dir` (not following links), parents before children,
 * down to `maxDepth` levels (1: its entries only). `minDepth` 0 lists `dir`
 * itself as `""`. Nothing when `dir` is missing; throws when find fails.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listRaw } from "./_raw_list.ts";
 * const d = await Deno.makeTempDir();
 * await Deno.mkdir(`${d}/sub`);
 * await Deno.writeTextFile(`${d}/sub/a.txt`, "hi");
 * const all = await listRaw(d);
 * assert.deepEqual(all.map((e) => `${e.type}:${e.rel}`), ["d:sub", "f:sub/a.txt"]);
 * assert.equal(all[1].size, 2);
 * ```
 */
export async function listRaw(
  dir: string,
  opts: { minDepth?: number; maxDepth?: number } = {},
): Promise<RawEntry[]> {
  const depth = ["-mindepth", String(opts.minDepth ?? 1)];
  if (opts.maxDepth !== undefined) depth.push("-maxdepth", String(opts.maxDepth));
  return await findRaw(dir, depth, (print) => print);
}

/** find's `-printf` for one {@link RawEntry}. */
const _PRINT = ["-printf", "%y\\t%i\\t%s\\t%T@\\t%C@\\t%m\\t%P\\0"];

/**
 * The entries of `dir` that a find expression prints: `options` come first
 * (`-mindepth`, …), `expr(print)` builds the expression, `print` being the
 * action that lists an entry.
 */
export async function findRaw(
  dir: string,
  options: string[],
  expr: (print: string[]) => string[],
  skipUnreadable = false,
): Promise<RawEntry[]> {
  const out = await new Deno.Command("find", {
    args: ["-P", dir, ...options, ...expr(_PRINT)],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin", LC_ALL: "C" },
  }).output();
  if (!out.success) {
    // A path removed meanwhile is no reason to stop (nor, when asked, a folder it cannot read).
    const ok = skipUnreadable
      ? /No such file or directory|Not a directory|Permission denied/
      : /No such file or directory|Not a directory/;
    const bad = new TextDecoder().decode(out.stderr).split("\n").filter((l) => l && !ok.test(l));
    if (bad.length) throw new Error(`find could not list ${dir}: ${bad[0].slice(0, 200)}`);
  }
  return _records(out.stdout);
}

function _records(buf: Uint8Array): RawEntry[] {
  const out: RawEntry[] = [];
  const dec = new TextDecoder();
  let at = 0;
  while (at < buf.length) {
    const end = buf.indexOf(0, at);
    const rec = buf.subarray(at, end < 0 ? buf.length : end);
    at = end < 0 ? buf.length : end + 1;
    const fields: string[] = [];
    let from = 0;
    for (let i = 0; i < 6; i++) {
      const tab = rec.indexOf(0x09, from);
      if (tab < 0) break;
      fields.push(dec.decode(rec.subarray(from, tab)));
      from = tab + 1;
    }
    if (fields.length < 6) continue;
    const name = rec.subarray(from);
    const utf8 = isUtf8(name);
    out.push({
      rel: utf8 ? dec.decode(name) : escapeName(name),
      utf8,
      type: (/^[fdlcbps]$/.test(fields[0]) ? fields[0] : "?") as RawType,
      ino: Number(fields[1]),
      size: Number(fields[2]),
      mtimeMs: _ms(fields[3]),
      ctimeMs: _ms(fields[4]),
      mode: parseInt(fields[5], 8) || 0,
    });
  }
  return out;
}

/** Seconds with a fraction (`1733535183.123456789`) to whole milliseconds, as Deno gives them. */
function _ms(s: string): number {
  const [whole, frac = ""] = s.split(".");
  return Number(whole) * 1000 + Number((frac + "000").slice(0, 3));
}

/**
 * Whether `bytes` are well-formed UTF-8.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isUtf8 } from "./_raw_list.ts";
 * assert.equal(isUtf8(new TextEncoder().encode("é.txt")), true);
 * assert.equal(isUtf8(new Uint8Array([0x62, 0xff])), false);
 * ```
 */
export function isUtf8(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length;) {
    const n = _seqLen(bytes, i);
    if (n === 0) return false;
    i += n;
  }
  return true;
}

/**
 * A name as the change list and the audit show it: UTF-8 as is, every
 * other byte as `\xNN` (and a backslash as `\\`, so that the two never
 * meet), in a name that has such bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { escapeName } from "./_raw_list.ts";
 * assert.equal(escapeName(new Uint8Array([0x62, 0x61, 0x64, 0xff, 0x2e, 0x74])), "bad\\xff.t");
 * ```
 */
export function escapeName(bytes: Uint8Array): string {
  const dec = new TextDecoder();
  let s = "";
  for (let i = 0; i < bytes.length;) {
    const n = _seqLen(bytes, i);
    if (n === 0) {
      s += `\\x${bytes[i].toString(16).padStart(2, "0")}`;
      i++;
      continue;
    }
    const c = dec.decode(bytes.subarray(i, i + n));
    s += c === "\\" ? "\\\\" : c;
    i += n;
  }
  return s;
}

/** The length of the UTF-8 sequence at `i`, or 0 when it is not one. */
function _seqLen(b: Uint8Array, i: number): number {
  const x = b[i];
  if (x < 0x80) return 1;
  let n: number, lo = 0x80, hi = 0xbf;
  if (x >= 0xc2 && x <= 0xdf) n = 2;
  else if (x >= 0xe0 && x <= 0xef) {
    n = 3;
    if (x === 0xe0) lo = 0xa0;
    if (x === 0xed) hi = 0x9f;
  } else if (x >= 0xf0 && x <= 0xf4) {
    n = 4;
    if (x === 0xf0) lo = 0x90;
    if (x === 0xf4) hi = 0x8f;
  } else return 0;
  if (i + n > b.length) return 0;
  if (b[i + 1] < lo || b[i + 1] > hi) return 0;
  for (let k = 2; k < n; k++) if (b[i + k] < 0x80 || b[i + k] > 0xbf) return 0;
  return n;
}
