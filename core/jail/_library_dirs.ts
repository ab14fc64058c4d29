/**
 * The folders of a binary's shared libraries, as `ldd` lists them, kept in
 * a cache file between runs.
 *
 * `ldd` runs the dynamic loader on the binary: four processes, 10–60 ms of
 * a loaded two-core machine at every start of corral that builds a process
 * sandbox. The answer only changes when the binary or its libraries do, so
 * it is remembered with the binary's path, size and modification time and
 * the path, size and modification time of every library it named; a record
 * that differs in any of them is thrown away and `ldd` runs again. The
 * folders are bound read-only into sandboxes (ARCHITECTURE.md, "Process
 * sandbox"), so a stale answer could at worst leave a sandbox unable to
 * start, never give it more: and a stale answer is not used. Only
 * libraries in the system's folders are remembered (a record naming anything
 * else is ignored), so a record written by someone else names nothing new.
 *
 * @module
 */
import { dirname } from "node:path";

/** The folders a remembered library may be in. */
const _SYSTEM = ["/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/"];

function _system(path: string): boolean {
  return !path.includes("/../") && !path.includes("/./") && _SYSTEM.some((d) => path.startsWith(d));
}

interface _Stamp {
  path: string;
  size: number;
  mtime: number;
}

interface _Record {
  exec: _Stamp;
  libs: _Stamp[];
}

/**
 * The folders holding `exec`'s shared libraries (empty when `ldd` is missing
 * or names none), from `cacheFile` when its record still matches.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { libraryDirs } from "./_library_dirs.ts";
 * const dir = await Deno.makeTempDir();
 * const exec = Deno.realPathSync(Deno.execPath());
 * const first = await libraryDirs(exec, `${dir}/libs.json`);
 * assert.deepEqual(await libraryDirs(exec, `${dir}/libs.json`), first);
 * assert.deepEqual(await libraryDirs(exec), first);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function libraryDirs(exec: string, cacheFile?: string): Promise<string[]> {
  const known = cacheFile ? _read(cacheFile, exec) : undefined;
  const libs = known ?? await _ldd(exec);
  if (!known && cacheFile && libs.length > 0 && libs.every(_system)) _write(cacheFile, exec, libs);
  return [...new Set(libs.map((l) => dirname(l)))];
}

/** The libraries `ldd` names for `exec` (absolute paths), or none. */
async function _ldd(exec: string): Promise<string[]> {
  try {
    const io = { stdin: "null", stdout: "piped", stderr: "null" } as const;
    const out = await new Deno.Command("ldd", { args: [exec], ...io }).output();
    const libs: string[] = [];
    for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
      const m = line.match(/(\/\S+)\s+\(0x/);
      if (m) libs.push(m[1]);
    }
    return libs;
  } catch {
    return []; // no ldd: the caller's fallback
  }
}

function _stamp(path: string): _Stamp | undefined {
  try {
    const st = Deno.statSync(path);
    return st.isFile ? { path, size: st.size, mtime: st.mtime?.getTime() ?? 0 } : undefined;
  } catch {
    return undefined;
  }
}

function _same(a: _Stamp | undefined, b: _Stamp): boolean {
  return !!a && a.path === b.path && a.size === b.size && a.mtime === b.mtime;
}

/** The libraries of a record that still matches `exec` and every library, else undefined. */
function _read(file: string, exec: string): string[] | undefined {
  try {
    const r = JSON.parse(Deno.readTextFileSync(file)) as _Record;
    if (!Array.isArray(r?.libs) || r.libs.length === 0) return undefined;
    if (!_same(_stamp(exec), r.exec)) return undefined;
    for (const lib of r.libs) {
      if (typeof lib?.path !== "string" || !_system(lib.path)) return undefined;
      if (!_same(_stamp(lib.path), lib)) return undefined;
    }
    return r.libs.map((l) => l.path);
  } catch {
    return undefined;
  }
}

function _write(file: string, exec: string, libs: string[]): void {
  const stamps = [exec, ...libs].map(_stamp);
  if (stamps.some((s) => !s)) return; // something moved meanwhile: no record
  const record: _Record = { exec: stamps[0]!, libs: stamps.slice(1) as _Stamp[] };
  try {
    // Never make the cache's parent again: a cache folder removed meanwhile (its owner gone)
    // stays removed, and the record is simply not kept.
    Deno.statSync(dirname(dirname(file)));
    Deno.mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${crypto.randomUUID()}.tmp`;
    Deno.writeTextFileSync(tmp, JSON.stringify(record));
    Deno.renameSync(tmp, file);
  } catch { /* no cache: ldd again next time */ }
}
