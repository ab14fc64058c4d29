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
  const dec = new TextDecoder("utf-8", { fatal: true });
  let rest = new Uint8Array(0);
  let out: UpperEntry[] = [];
  let bad: string | undefined;
  try {
    for await (const bytes of child.stdout) {
      const buf = rest.length ? _concat(rest, bytes) : bytes;
      let at = 0;
      for (let nul = buf.indexOf(0, at); nul >= 0; nul = buf.indexOf(0, at)) {
        const rec = buf.subarray(at, nul);
        at = nul + 1;
        const e = _record(rec, dec);
        if (!e) continue;
        if ("badPath" in e) {
          // Beneath a name already handed on: it goes with it.
          if (bad !== undefined && _startsWith(e.badPath, bad)) continue;
          bad = _latin(e.badPath) + "/";
          o.onBadName?.(e.badPath);
          continue;
        }
        if (e.kind === "other" && e.device) await _whiteout(e, upper);
        out.push(e);
        if (out.length >= size) {
          yield out;
          out = [];
        }
      }
      rest = buf.slice(at);
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

function _record(rec: Uint8Array, dec: TextDecoder): _Entry | { badPath: Uint8Array } | undefined {
  // Six fields before the path, each ending with a space.
  let at = 0;
  const fields: string[] = [];
  for (let i = 0; i < 6; i++) {
    const sp = rec.indexOf(0x20, at);
    if (sp < 0) return undefined;
    fields.push(_latin(rec.subarray(at, sp)));
    at = sp + 1;
  }
  const pathBytes = rec.subarray(at);
  let rel: string;
  try {
    rel = dec.decode(pathBytes);
  } catch {
    return { badPath: pathBytes.slice() };
  }
  const [y, ino, size, mtime, birth, mode] = fields;
  const kind: UpperKind = y === "f" ? "file" : y === "d" ? "dir" : y === "l" ? "symlink" : "other";
  return {
    ...(y === "c" ? { device: true } : {}),
    rel,
    kind,
    ino: Number(ino),
    size: Number(size),
    mtimeMs: _ms(mtime),
    birthMs: _ms(birth),
    mode: parseInt(mode, 8) & 0o7777,
  };
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

function _latin(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 8192) {
    s += String.fromCharCode(...b.subarray(i, i + 8192));
  }
  return s;
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
