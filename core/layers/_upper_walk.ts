/**
 * Reading a sandbox's upper layer on the host: every entry the overlay
 * made there (a file written or copied up, a folder, a symlink, a whiteout
 * for a removed path), and which folders are opaque (removed and made again:
 * what the lower folder held is gone in the sandbox's view).
 *
 * Whiteouts are character devices 0:0. Opaque folders carry the overlay's
 * `trusted.overlay.opaque` (root) or `user.overlay.opaque` xattr, which
 * Deno cannot read: GNU tar reads it for corral (its `--xattrs` PAX
 * records), for the few folders where it matters.
 *
 * @module
 */
import { join } from "node:path";
import { listRaw } from "./_raw_list.ts";

/** What an upper-layer entry is. */
export type UpperKind = "file" | "dir" | "symlink" | "whiteout" | "other";

/** One entry of an upper layer. */
export interface UpperEntry {
  /** `/`-separated, relative to the layer's root. */
  rel: string;
  kind: UpperKind;
  ino: number;
  size: number;
  mtimeMs: number;
  /** When the entry was made in the layer (a copy-up's time), or 0 when unknown. */
  birthMs: number;
  /** Permission bits. */
  mode: number;
  /**
   * Set when the name is not UTF-8 (`rel` is then escaped, for showing only;
   * `kind` is `other`): what it was, a file or other entry, a folder with
   * all it holds, or a removal (a whiteout).
   */
  notUtf8?: "entry" | "folder" | "removal";
}

/**
 * Every entry of the upper layer `upper`, parents before children.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { walkUpper } from "./_upper_walk.ts";
 * const u = await Deno.makeTempDir();
 * await Deno.mkdir(`${u}/d`);
 * await Deno.writeTextFile(`${u}/d/a.txt`, "hi");
 * const e = await walkUpper(u);
 * assert.deepEqual(e.map((x) => `${x.kind}:${x.rel}`), ["dir:d", "file:d/a.txt"]);
 * ```
 */
export async function walkUpper(upper: string): Promise<UpperEntry[]> {
  const out: UpperEntry[] = [];
  const walk = async (rel: string): Promise<void> => {
    const dir = rel ? join(upper, rel) : upper;
    const names: string[] = [];
    try {
      for await (const e of Deno.readDir(dir)) names.push(e.name);
    } catch {
      return; // gone meanwhile
    }
    // A name that is not UTF-8 comes lossy ("\uFFFD") and opens nothing: listed by bytes.
    if (names.some((n) => n.includes("\uFFFD"))) out.push(...await _notUtf8Entries(upper, rel));
    names.splice(0, names.length, ...new Set(names));
    names.sort();
    const entries = await Promise.all(names.map(async (name) => {
      const r = rel ? `${rel}/${name}` : name;
      try {
        return _entry(r, await Deno.lstat(join(upper, r)));
      } catch {
        return undefined;
      }
    }));
    for (const e of entries) {
      if (!e) continue;
      out.push(e);
      if (e.kind === "dir") await walk(e.rel);
    }
  };
  await walk("");
  return out;
}

function _entry(rel: string, st: Deno.FileInfo): UpperEntry {
  const kind: UpperKind = st.isSymlink
    ? "symlink"
    : st.isFile
    ? "file"
    : st.isDirectory
    ? "dir"
    : st.isCharDevice && (st.rdev ?? -1) === 0
    ? "whiteout"
    : "other";
  return {
    rel,
    kind,
    ino: st.ino ?? 0,
    size: st.size,
    mtimeMs: st.mtime?.getTime() ?? 0,
    birthMs: st.birthtime?.getTime() ?? 0,
    mode: (st.mode ?? 0) & 0o7777,
  };
}

/**
 * The entries of the layer folder `upper/rel` whose names are not UTF-8,
 * as upper-layer entries of kind `other` marked `notUtf8` (their `rel`
 * escaped): what {@link walkUpper} cannot read by name is refused, never
 * skipped.
 */
async function _notUtf8Entries(upper: string, rel: string): Promise<UpperEntry[]> {
  const dir = rel ? `${upper}/${rel}` : upper;
  return (await listRaw(dir, { maxDepth: 1 })).filter((e) => !e.utf8).map((e) => ({
    rel: rel ? `${rel}/${e.rel}` : e.rel,
    kind: "other" as const,
    ino: e.ino,
    size: e.size,
    mtimeMs: e.mtimeMs,
    birthMs: 0,
    mode: e.mode & 0o7777,
    notUtf8: e.type === "d" ? "folder" : e.type === "c" ? "removal" : "entry",
  }));
}

/**
 * Which of the folders `rels` (relative to `upper`) are opaque, read by
 * GNU tar. Throws when tar cannot be run: a folder whose opacity is unknown
 * cannot be applied correctly.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { opaqueFolders } from "./_upper_walk.ts";
 * const u = await Deno.makeTempDir();
 * await Deno.mkdir(`${u}/d`);
 * assert.equal((await opaqueFolders(u, ["d"])).size, 0);
 * ```
 */
export async function opaqueFolders(upper: string, rels: string[]): Promise<Set<string>> {
  const found = new Set<string>();
  if (rels.length === 0) return found;
  const out = await new Deno.Command("tar", {
    args: [
      "--xattrs",
      "--xattrs-include=trusted.overlay.opaque",
      "--xattrs-include=user.overlay.opaque",
      "--no-recursion",
      "-cf",
      "-",
      "-C",
      upper,
      "--",
      ...rels.map((r) => `./${r}`),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin", LC_ALL: "C" },
  }).output();
  if (!out.success && out.stdout.length === 0) {
    throw new Error(`tar could not read the layer's folders: ${_firstLine(out.stderr)}`);
  }
  for (const { name, pax } of _tarEntries(out.stdout)) {
    const opaque = pax["SCHILY.xattr.trusted.overlay.opaque"] ??
      pax["SCHILY.xattr.user.overlay.opaque"];
    if (opaque === "y") found.add(name.replace(/^\.\//, "").replace(/\/$/, ""));
  }
  return found;
}

/** The entries of a tar stream with the PAX records that precede each. */
function* _tarEntries(buf: Uint8Array): Generator<{ name: string; pax: Record<string, string> }> {
  const dec = new TextDecoder();
  let pax: Record<string, string> = {};
  for (let at = 0; at + 512 <= buf.length;) {
    const head = buf.subarray(at, at + 512);
    if (head.every((b) => b === 0)) break;
    const str = (from: number, len: number) =>
      dec.decode(head.subarray(from, from + len)).replace(/\0.*$/s, "");
    const size = parseInt(str(124, 12).trim() || "0", 8);
    const type = String.fromCharCode(head[156]);
    const body = buf.subarray(at + 512, at + 512 + size);
    at += 512 + Math.ceil(size / 512) * 512;
    if (type === "x") {
      pax = { ...pax, ..._paxRecords(body) };
      continue;
    }
    if (type === "g") continue;
    const prefix = str(345, 155);
    const name = pax.path ?? (prefix ? `${prefix}/${str(0, 100)}` : str(0, 100));
    yield { name, pax };
    pax = {};
  }
}

/** PAX records: `LEN key=value\n`, LEN counting bytes (names may be any UTF-8). */
function _paxRecords(body: Uint8Array): Record<string, string> {
  const dec = new TextDecoder();
  const out: Record<string, string> = {};
  let at = 0;
  while (at < body.length) {
    const sp = body.indexOf(0x20, at);
    const len = sp < 0 ? NaN : parseInt(dec.decode(body.subarray(at, sp)), 10);
    if (!(len > 0) || at + len > body.length) break;
    const rec = dec.decode(body.subarray(sp + 1, at + len - 1));
    const eq = rec.indexOf("=");
    if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1);
    at += len;
  }
  return out;
}

function _firstLine(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes).split("\n")[0]?.slice(0, 200) ?? "";
}
