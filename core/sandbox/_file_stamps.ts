/**
 * What corral already hashed, by file stamp (core/base/file_stamp.ts): a
 * file whose size, inode, modification and change times are what they were
 * when its bytes were hashed holds those bytes still, so a sandbox's start
 * does not read and hash it again. A file rewritten and given its old
 * modification time is read again (its change time moved); a file changed
 * less than 3 s before it was stamped is never trusted by stamp. The stamps
 * are kept for the next start in corral's code store (`stamps.json` beside
 * the module sets: part of the trust base, out of every tool's reach).
 *
 * @module
 */
import { join, resolve } from "node:path";
import { IMPORT_SPECIFIER, type Pins, resolveLocal, sha256Hex } from "./module_graph.ts";
import { fileStamp } from "../base/mod.ts";

/** A file's stamp (size, inode, mtime, ctime), or undefined when too young or unreadable. */
export type Stamp = string;

export { fileStamp };

const _VERSION = 1;

interface _Known {
  stamp: Stamp;
  hash: string;
  /** The local files it imports (absolute), when it was read for its imports. */
  imports?: string[];
}

/**
 * Hashes (and imports) of files by stamp, for this process and kept in a
 * file for the next ones.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FileStamps } from "./_file_stamps.ts";
 * const dir = await Deno.makeTempDir();
 * const file = `${dir}/a.ts`;
 * await Deno.writeTextFile(file, "export {};\n");
 * const old = new Date(Date.now() - 10_000);
 * await Deno.utime(file, old, old);
 * const stamps = new FileStamps(`${dir}/stamps.json`);
 * assert.equal(stamps.known(file), undefined);
 * // The change time is the utime itself: too young to trust until 3 s have passed.
 * stamps.remember(file, "h", []);
 * assert.equal(stamps.known(file), undefined);
 * ```
 */
export class FileStamps {
  readonly #file: string | undefined;
  #known: Map<string, _Known> | undefined;
  #dirty = false;

  /** Stamps kept in `file` (none: this process only). */
  constructor(file?: string) {
    this.#file = file;
  }

  /** What was hashed of `path` when it had the stamp it has now, or undefined. */
  known(path: string): { hash: string; imports?: string[] } | undefined {
    const k = this.#load().get(path);
    if (!k) return undefined;
    const now = fileStamp(path);
    return now !== undefined && now === k.stamp ? k : undefined;
  }

  /**
   * Remember that `path` hashed to `hash` (read for `imports`, if given).
   * Call it with the stamp taken BEFORE the file was read (`stamp`): a
   * change during the read then shows as a different stamp next time.
   */
  remember(path: string, hash: string, imports?: string[], stamp = fileStamp(path)): void {
    if (stamp === undefined) return;
    const k = this.#load().get(path);
    if (k && k.stamp === stamp && k.hash === hash) return;
    this.#known!.set(path, { stamp, hash, ...(imports ? { imports } : {}) });
    this.#dirty = true;
  }

  /** Write the stamps for the next start, if any changed (whole or not at all). */
  save(): void {
    if (!this.#file || !this.#dirty || !this.#known) return;
    this.#dirty = false;
    try {
      const tmp = `${this.#file}.${crypto.randomUUID()}.tmp`;
      Deno.mkdirSync(join(this.#file, ".."), { recursive: true, mode: 0o700 });
      Deno.writeTextFileSync(
        tmp,
        JSON.stringify({ v: _VERSION, files: Object.fromEntries(this.#known) }),
        { mode: 0o600 },
      );
      Deno.renameSync(tmp, this.#file);
    } catch { /* the next start hashes again */ }
  }

  #load(): Map<string, _Known> {
    if (this.#known) return this.#known;
    this.#known = new Map();
    if (!this.#file) return this.#known;
    try {
      const data = JSON.parse(Deno.readTextFileSync(this.#file));
      if (data?.v === _VERSION && data.files && typeof data.files === "object") {
        for (const [path, k] of Object.entries(data.files as Record<string, _Known>)) {
          if (typeof k?.stamp === "string" && typeof k.hash === "string") this.#known.set(path, k);
        }
      }
    } catch { /* none yet, or unreadable: hash again */ }
    return this.#known;
  }
}

/**
 * The local module graph of `entries` (as `localModuleGraph` finds it) with
 * each file's SHA-256 (as `pinGraph` pins it), reading only the files whose
 * stamp changed since `stamps` saw them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FileStamps, stampedGraph } from "./_file_stamps.ts";
 * import { pinGraph } from "./module_graph.ts";
 * const entry = new URL("./protocol.ts", import.meta.url).pathname;
 * const { pins } = await stampedGraph([entry], new FileStamps());
 * assert.deepEqual(pins, await pinGraph([entry]));
 * ```
 */
export async function stampedGraph(
  entries: string[],
  stamps: FileStamps,
): Promise<{ files: string[]; pins: Pins }> {
  const pins: Pins = {};
  const queue = entries.map((e) => resolve(e));
  while (queue.length) {
    const file = queue.pop()!;
    if (file in pins) continue;
    let known = stamps.known(file);
    if (!known?.imports) {
      const stamp = fileStamp(file);
      let bytes: Uint8Array;
      try {
        bytes = await Deno.readFile(file);
      } catch {
        pins[file] = "missing";
        continue;
      }
      const imports: string[] = [];
      for (const m of new TextDecoder().decode(bytes).matchAll(IMPORT_SPECIFIER)) {
        const target = resolveLocal(m[1] ?? m[2], file);
        if (target) imports.push(target);
      }
      known = { hash: await sha256Hex(bytes), imports };
      stamps.remember(file, known.hash, imports, stamp);
    }
    pins[file] = known.hash;
    for (const target of known.imports!) if (!(target in pins)) queue.push(target);
  }
  return { files: Object.keys(pins).sort(), pins };
}

/**
 * The SHA-256 of `path` (`"missing"` when it cannot be read), read only
 * when its stamp changed since `stamps` saw it.
 */
export async function stampedHash(path: string, stamps: FileStamps): Promise<string> {
  const known = stamps.known(path);
  if (known) return known.hash;
  const stamp = fileStamp(path);
  let hash: string;
  try {
    hash = await sha256Hex(await Deno.readFile(path));
  } catch {
    return "missing";
  }
  stamps.remember(path, hash, undefined, stamp);
  return hash;
}
