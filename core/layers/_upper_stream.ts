/**
 * Reading a whole upper layer as a stream: GNU find walks it (one process,
 * no symlink followed, parents before children) and prints each entry's
 * kind, inode, size, times and mode; the host reads them in chunks, so
 * its memory does not grow with the layer while it reads. Used by
 * ./_layer_diff.ts; ./_upper_walk.ts reads small parts.
 *
 * A name that is not UTF-8 cannot be carried as a JavaScript string
 * without loss: such an entry is yielded as kind `other`, marked `notUtf8`
 * (a file or other entry, a folder with all it holds, or a removal), its
 * path escaped for showing (./_raw_list.ts `escapeName`), for the judge to
 * refuse and name (./_layer_judge.ts); what lies beneath such a folder is
 * not yielded apart.
 *
 * @module
 */
import { escapeName } from "./_raw_list.ts";
import type { UpperEntry, UpperKind } from "./_upper_walk.ts";

/** What {@link streamUpper} is told. */
export interface StreamOptions {
  /**
   * Told of each entry beneath a folder whose name is not UTF-8 (never
   * yielded apart): its size when a file, else 0; so a quota counts it.
   */
  hidden?: (size: number) => void;
  /** Entries per chunk (default 1024). */
  chunk?: number;
}

// kind inode size mtime birth mode path, NUL-terminated.
const _FORMAT = "%y %i %s %T@ %B@ %m %P\\0";

/**
 * Every entry of the upper layer `upper`, parents before children, in
 * chunks. Throws when find cannot run or the layer cannot be read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { streamUpper } from "./_upper_stream.ts";
 * const u = await Deno.makeTempDir();
 * await Deno.mkdir(`${u}/d`);
 * await Deno.writeTextFile(`${u}/d/a.txt`, "hi");
 * const seen: string[] = [];
 * for await (const chunk of streamUpper(u)) for (const e of chunk) seen.push(`${e.kind}:${e.rel}`);
 * assert.deepEqual(seen, ["dir:d", "file:d/a.txt"]);
 * ```
 */
export async function* streamUpper(
  upper: string,
  o: StreamOptions = {},
): AsyncGenerator<UpperEntry[]> {
  const child = new Deno.Command("find", {
    args: ["-P", upper, "-mindepth", "1", "-printf", _FORMAT],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin", LC_ALL: "C" },
  }).spawn();
  const errors = new Response(child.stderr).text();
  const size = o.chunk ?? 1024;
  const strict = new TextDecoder("utf-8", { fatal: true });
  let rest = new Uint8Array(0);
  let out: UpperEntry[] = [];
  let bad: Uint8Array | undefined;
  try {
    for await (const bytes of child.stdout) {
      const buf = rest.length ? _concat(rest, bytes) : bytes;
      let at = 0;
      for (let nul = buf.indexOf(0); nul >= 0; nul = buf.indexOf(0, at)) {
        const e = _fields(buf, at, nul);
        const from = _cur.at;
        at = nul + 1;
        if (!e) continue;
        // Beneath a folder already yielded whole (its name not UTF-8): counted only.
        if (bad !== undefined && _under(buf.subarray(from, nul), bad)) {
          o.hidden?.(e.kind === "file" ? e.size : 0);
          continue;
        }
        // Each path decoded alone: a fresh string, holding nothing else alive.
        try {
          e.rel = strict.decode(buf.subarray(from, nul));
        } catch {
          const path = buf.slice(from, nul);
          if (e.kind === "dir") bad = path;
          e.notUtf8 = e.kind === "dir" ? "folder" : _cur.device ? "removal" : "entry";
          e.kind = "other";
          e.rel = escapeName(path);
          out.push(e);
          continue;
        }
        if (_cur.device) await _whiteout(e, upper);
        out.push(e);
      }
      rest = buf.slice(at);
      if (out.length >= size) {
        yield out;
        out = [];
      }
    }
    if (out.length) yield out;
  } finally {
    try {
      child.kill();
    } catch { /* ended */ }
  }
  const status = await child.status;
  const why = (await errors).trim();
  // A folder gone while it was read is no failure; anything else is.
  if (!status.success && why && !/No such file or directory/.test(why)) {
    throw new Error(`find could not read the layer: ${why.split("\n")[0].slice(0, 200)}`);
  }
}

/** A whiteout is a character device 0:0 (find does not print the device number). */
async function _whiteout(e: UpperEntry, upper: string): Promise<void> {
  try {
    const st = await Deno.lstat(`${upper}/${e.rel}`);
    if (st.isCharDevice && (st.rdev ?? -1) === 0) e.kind = "whiteout";
  } catch { /* gone meanwhile */ }
}

const _SP = 0x20, _DOT = 0x2e, _ZERO = 0x30;

/** Where {@link _fields} stopped (the path's first byte), and whether it read a device. */
const _cur = { at: 0, end: 0, buf: new Uint8Array(0) as Uint8Array, device: false };

function _int(base: number): number {
  const { buf, end } = _cur;
  let n = 0, at = _cur.at;
  for (; at < end && buf[at] !== _SP; at++) n = n * base + buf[at] - _ZERO;
  _cur.at = at + 1;
  return n;
}

/** Seconds and a fraction, as whole milliseconds (as Deno's lstat gives); "-1…": unknown. */
function _ms(): number {
  const { buf, end } = _cur;
  let at = _cur.at;
  if (buf[at] === 0x2d) {
    while (at < end && buf[at] !== _SP) at++;
    _cur.at = at + 1;
    return 0;
  }
  let s = 0, frac = 0, digits = 0;
  for (; at < end && buf[at] !== _SP && buf[at] !== _DOT; at++) s = s * 10 + buf[at] - _ZERO;
  if (buf[at] === _DOT) {
    for (at++; at < end && buf[at] !== _SP; at++) {
      if (digits++ < 3) frac = frac * 10 + buf[at] - _ZERO;
    }
  }
  _cur.at = at + 1;
  while (digits++ < 3) frac *= 10;
  return s * 1000 + frac;
}

/**
 * The six fields of the record `buf[from, end)` (`kind inode size mtime
 * birth mode `), read from its bytes without a string; its path starts at
 * `_cur.at` after it.
 */
function _fields(buf: Uint8Array, from: number, end: number): UpperEntry | undefined {
  if (end - from < 12 || buf[from + 1] !== _SP) return undefined;
  const y = buf[from];
  _cur.buf = buf;
  _cur.end = end;
  _cur.at = from + 2;
  _cur.device = y === 0x63;
  const ino = _int(10), size = _int(10), mtimeMs = _ms(), birthMs = _ms();
  const mode = _int(8) & 0o7777;
  if (_cur.at > end) return undefined;
  const kind: UpperKind = y === 0x66
    ? "file"
    : y === 0x64
    ? "dir"
    : y === 0x6c
    ? "symlink"
    : "other";
  return { rel: "", kind, ino, size, mtimeMs, birthMs, mode };
}

/** Whether `path` lies beneath `dir` (bytes). */
function _under(path: Uint8Array, dir: Uint8Array): boolean {
  if (path.length <= dir.length || path[dir.length] !== 0x2f) return false;
  for (let i = 0; i < dir.length; i++) if (path[i] !== dir[i]) return false;
  return true;
}

function _concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
