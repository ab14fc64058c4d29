/**
 * Reading a whole upper layer as a stream: GNU find walks it (one process,
 * no symlink followed, parents before children) and prints each entry's
 * kind, inode, size, times and mode; the host reads them in chunks, so
 * its memory does not grow with the layer while it reads. Used by
 * ./layer_diff.ts; ./upper_walk.ts reads small parts.
 *
 * A name that is not UTF-8 cannot be carried as a JavaScript string
 * without loss: such an entry (and what lies beneath it) is not yielded,
 * and is handed to `onBadName` as the bytes of its path, relative to the
 * layer, for the settlement to refuse and name.
 *
 * @module
 */
import type { UpperEntry, UpperKind } from "./upper_walk.ts";

/** What {@link streamUpper} is told. */
export interface StreamOptions {
  /** A path that is not UTF-8 (bytes, relative to the layer); never yielded. */
  onBadName?: (path: Uint8Array) => void;
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
 * import { streamUpper } from "./upper_stream.ts";
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
  let bad: string | undefined;
  const take = async (e: _Entry) => {
    if (e.kind === "other" && e.device) await _whiteout(e, upper);
    out.push(e);
  };
  try {
    for await (const bytes of child.stdout) {
      const buf = rest.length ? _concat(rest, bytes) : bytes;
      // Records end with NUL, which no UTF-8 sequence holds: decoded up to the last one.
      const end = buf.lastIndexOf(0) + 1;
      rest = buf.slice(end);
      let text: string | undefined;
      try {
        text = strict.decode(buf.subarray(0, end));
      } catch { /* a name that is not UTF-8 in this chunk: record by record */ }
      if (text !== undefined) {
        for (const rec of text.split("\0")) {
          const e = rec ? _record(rec) : undefined;
          if (e) await take(e);
        }
      } else {
        for (let at = 0, nul = buf.indexOf(0); nul >= 0 && nul < end; nul = buf.indexOf(0, at)) {
          const rec = buf.subarray(at, nul);
          at = nul + 1;
          let str: string;
          try {
            str = strict.decode(rec);
          } catch {
            const path = rec.slice(_fieldsEnd(rec));
            // Beneath a name already handed on: it goes with it.
            if (bad !== undefined && _startsWith(path, bad)) continue;
            bad = String.fromCharCode(...path) + "/";
            o.onBadName?.(path);
            continue;
          }
          const e = _record(str);
          if (e) await take(e);
        }
      }
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

/** An entry, and whether it is a character device (a whiteout, or another device). */
type _Entry = UpperEntry & { device?: boolean };

/** A whiteout is a character device 0:0 (find does not print the device number). */
async function _whiteout(e: _Entry, upper: string): Promise<void> {
  delete e.device;
  try {
    const st = await Deno.lstat(`${upper}/${e.rel}`);
    if (st.isCharDevice && (st.rdev ?? -1) === 0) e.kind = "whiteout";
  } catch { /* gone meanwhile */ }
}

function _record(rec: string): _Entry | undefined {
  // Six fields before the path, each ending with a space.
  const f: string[] = [];
  let at = 0;
  for (let i = 0; i < 6; i++) {
    const sp = rec.indexOf(" ", at);
    if (sp < 0) return undefined;
    f.push(rec.slice(at, sp));
    at = sp + 1;
  }
  const y = f[0];
  const kind: UpperKind = y === "f" ? "file" : y === "d" ? "dir" : y === "l" ? "symlink" : "other";
  const e: _Entry = {
    rel: rec.slice(at),
    kind,
    ino: Number(f[1]),
    size: Number(f[2]),
    mtimeMs: _ms(f[3]),
    birthMs: _ms(f[4]),
    mode: parseInt(f[5], 8) & 0o7777,
  };
  if (y === "c") e.device = true;
  return e;
}

/** Where the path starts in a record (after its six fields). */
function _fieldsEnd(rec: Uint8Array): number {
  let at = 0;
  for (let i = 0; i < 6; i++) at = rec.indexOf(0x20, at) + 1;
  return at;
}

/** Seconds with a fraction (`1733000000.123456789`) as whole milliseconds, as Deno's lstat gives. */
function _ms(t: string): number {
  const dot = t.indexOf(".");
  if (t.startsWith("-")) return 0; // unknown (a birth time the file system does not keep)
  if (dot < 0) return Number(t) * 1000 || 0;
  const s = Number(t.slice(0, dot));
  const frac = (t.slice(dot + 1) + "000").slice(0, 3);
  if (!Number.isFinite(s) || s < 0) return 0;
  return s * 1000 + Number(frac);
}

function _startsWith(b: Uint8Array, prefix: string): boolean {
  if (b.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (b[i] !== prefix.charCodeAt(i)) return false;
  return true;
}

function _concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
