/**
 * What discovery knows of each file, remembered between starts: its size,
 * mtime, SHA-256 and the local files it imports. A file whose size and
 * mtime did not change is neither read nor hashed again, and neither are
 * the files of a graph around it: invalidation is per file. A file is
 * read and hashed at most once per discovery, and its bytes are kept for
 * that discovery, so that its pinned copy (core/sandbox/pinned_code.ts) is
 * written from the very bytes that were hashed.
 *
 * A file modified in the last {@link RACY_MS} when it was read is used but
 * not remembered: an edit within the same mtime tick could go unseen.
 *
 * @module
 */
import { IMPORT_SPECIFIER, type Pins, resolveLocal } from "../sandbox/mod.ts";

/** Files modified this recently when they were read are not remembered. */
export const RACY_MS = 3000;

/** One file as remembered: size, mtime, SHA-256, the local files it imports. */
export type FileEntry = [size: number, mtimeMs: number, hash: string, imports: string[]];

/**
 * The index: remembered entries (from the cache file), what this discovery
 * found, and the bytes it read.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FileIndex } from "./file_index.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/b.ts`, "export const b = 1;\n");
 * await Deno.writeTextFile(`${dir}/a.ts`, 'import { b } from "./b.ts";\n');
 * const index = new FileIndex({});
 * const pins = await index.pins(`${dir}/a.ts`);
 * assert.deepEqual(Object.keys(pins).sort(), [`${dir}/a.ts`, `${dir}/b.ts`]);
 * assert.equal(index.hashed, 2);
 * await index.pins(`${dir}/a.ts`);
 * assert.equal(index.hashed, 2); // once per discovery
 * ```
 */
export class FileIndex {
  /** Files read and hashed by this index (not served by size and mtime), for tests. */
  hashed = 0;
  readonly #known: Record<string, FileEntry>;
  /** Entries checked (stat) in this discovery: current, or null when the file changed. */
  #checked = new Map<string, FileEntry | null>();
  /** Files read in this discovery: their entry (remembered or not) and bytes. */
  #read = new Map<string, Promise<{ entry: FileEntry; bytes?: Uint8Array }>>();
  #changed = false;

  /** An index over `known` (the entries a cache file kept; changed in place). */
  constructor(known: Record<string, FileEntry>) {
    this.#known = known;
  }

  /** Whether an entry was added or replaced since the index was made. */
  get changed(): boolean {
    return this.#changed;
  }

  /**
   * The pins of `module`'s local import graph (every file with its
   * SHA-256, `"missing"` for one that cannot be read) from remembered
   * entries alone, or undefined when a file of it changed or is unknown.
   * One `stat` per file, no read: for a start with many unchanged plugins.
   */
  known(module: string): Pins | undefined {
    const pins: Pins = {};
    const queue = [module];
    while (queue.length) {
      const file = queue.pop()!;
      if (file in pins) continue;
      const entry = this.#current(file);
      if (!entry) return undefined;
      pins[file] = entry[2];
      for (const i of entry[3]) if (!(i in pins)) queue.push(i);
    }
    return pins;
  }

  /**
   * The pins of `module`'s local import graph, reading and hashing only the
   * files that changed or are unknown (each once per discovery).
   */
  async pins(module: string): Promise<Pins> {
    const pins: Pins = {};
    let wave = [module];
    while (wave.length) {
      const entries = await Promise.all(wave.map((f) => this.#entry(f)));
      wave.forEach((file, i) => pins[file] = entries[i][2]);
      const next = new Set<string>();
      for (const e of entries) for (const i of e[3]) if (!(i in pins)) next.add(i);
      wave = [...next];
    }
    return pins;
  }

  /** The local files `file` imports when it is unchanged since remembered (one `stat`), else undefined. */
  importsOf(file: string): readonly string[] | undefined {
    return this.#current(file)?.[3];
  }

  /** The bytes of `file` as read in this discovery with their SHA-256, if it was read. */
  async bytes(file: string): Promise<{ bytes: Uint8Array; hash: string } | undefined> {
    const read = await this.#read.get(file);
    return read?.bytes ? { bytes: read.bytes, hash: read.entry[2] } : undefined;
  }

  /** Forget what this discovery checked and read (the next one sees edits). */
  reset(): void {
    this.#checked.clear();
    this.#read.clear();
    this.#changed = false;
  }

  /** The remembered entry of `file` when its size and mtime are unchanged (one stat a discovery). */
  #current(file: string): FileEntry | undefined {
    let entry = this.#checked.get(file);
    if (entry === undefined) {
      const known = Object.hasOwn(this.#known, file) ? this.#known[file] : undefined;
      entry = _wellFormed(known) && _unchanged(file, known) ? known : null;
      this.#checked.set(file, entry);
    }
    return entry ?? undefined;
  }

  async #entry(file: string): Promise<FileEntry> {
    const current = this.#current(file);
    if (current) return current;
    let reading = this.#read.get(file);
    if (!reading) this.#read.set(file, reading = this.#readFile(file));
    return (await reading).entry;
  }

  async #readFile(file: string): Promise<{ entry: FileEntry; bytes?: Uint8Array }> {
    // Stat first: if the file changes between the two, the size or mtime remembered is the
    // older one, and the next start reads it again.
    let st: Deno.FileInfo, bytes: Uint8Array;
    try {
      st = await Deno.stat(file);
      bytes = await Deno.readFile(file);
    } catch {
      return { entry: [-1, -1, "missing", []] };
    }
    this.hashed++;
    // WebCrypto: native, off the main thread (the TypeScript SHA-256 is for short strings).
    const hash = await _subtleHex(bytes);
    const imports: string[] = [];
    const text = new TextDecoder().decode(bytes);
    for (const m of text.matchAll(IMPORT_SPECIFIER)) {
      const target = resolveLocal(m[1] ?? m[2], file);
      if (target && target !== file && !imports.includes(target)) imports.push(target);
    }
    const mtime = st.mtime?.getTime();
    const entry: FileEntry = [st.size, mtime ?? -1, hash, imports];
    if (mtime !== undefined && st.isFile && Date.now() - mtime >= RACY_MS) {
      this.#known[file] = entry;
      this.#checked.set(file, entry);
      this.#changed = true;
    }
    return { entry, bytes };
  }
}

/** An entry as this version writes it (a cache file of another shape is read again). */
function _wellFormed(e: unknown): e is FileEntry {
  return Array.isArray(e) && e.length === 4 && typeof e[0] === "number" &&
    typeof e[1] === "number" && typeof e[2] === "string" && Array.isArray(e[3]) &&
    e[3].every((i) => typeof i === "string" && i.startsWith("/"));
}

function _unchanged(file: string, entry: FileEntry): boolean {
  try {
    // Sync: for many small files far cheaper than a promise each.
    const st = Deno.statSync(file);
    return st.isFile && st.size === entry[0] && st.mtime?.getTime() === entry[1];
  } catch {
    return false;
  }
}

async function _subtleHex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
