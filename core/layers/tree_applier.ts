/**
 * The process that writes settled changes into one write root of the
 * user's tree (./root_applier.ts starts it in that root, as it was opened
 * and checked).
 *
 * Where it writes: for each operation it stands in the folder that holds
 * the path (from the root, one folder at a time, made when missing) and
 * checks, after each step, where it stands (its real path, and the root's
 * inode): a name swapped for a symlink at any moment moves it elsewhere,
 * which is seen and refused before anything is written, and the write names
 * only the last component, in the folder it stands in. Operations of one
 * folder in a row share that walk (each re-checks where it stands). Deno
 * still opens a name by its full path, so a swap between the check and the
 * open is not seen here: what bounds it is the namespace the applier runs
 * in (./root_applier.ts), where the root is the only writable folder.
 *
 * How it writes (replacement, never in place): a file's new content (or a
 * link) is first written in a private folder beside it (mode 0700, named
 * core/guard/temp_names.ts's prefix and this applier's token), with its
 * final mode; then the data of every such file of the batch is flushed
 * with one `syncfs` per file system (`sync -f`; without it, one
 * `fdatasync` per file); only then is each renamed over its path. A rename
 * replaces the name, never the file: a hard link the tree held is broken,
 * never written through, and at every moment the path is the old file or
 * the new one, whole. A path that holds something else than the host saw
 * (`expect`) is left alone and answered as a conflict. An empty file at a
 * new path is made in place (there is no content to tear), exclusively. A
 * request marked `durable` ends with a `syncfs` of every file system it
 * wrote: its answer means the changes are on disk. Private folders are
 * removed at the end of each batch; one left by a kill is found again by
 * the host's journal (./apply_journal.ts). When the host is gone (stdin
 * closes), the batch under way is finished and the process exits.
 *
 * Protocol: one JSON request per line on stdin
 * (`{ id, ops: [{ op, rel, from?, mode?, keep?, size?, expect? }], durable? }`),
 * one JSON answer per line on stdout (`{ id, results: [{ ok, error?,
 * conflict?, sig? }] }`); the first line it writes is `{ ready: true, ino }`.
 * Its arguments: the token of its private folders.
 *
 * @module
 */
import { TEMP_PREFIX } from "../guard/temp_names.ts";

/** What a path of the tree is (kind, inode, size, modification time). */
export interface ApplierSig {
  kind: string;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** One write, relative to the root. */
export interface ApplierOp {
  op: "write" | "dir" | "link" | "remove" | "prune";
  rel: string;
  /** The upper layer's file or link (absolute, in corral's layers folder). */
  from?: string;
  /** The permission bits it gets: only `0o777` of them is ever kept. */
  mode?: number;
  /** For `prune`: the names the folder keeps. */
  keep?: string[];
  /** For `write`: the layer's file's size when walked (an empty new file needs no temporary). */
  size?: number;
  /** What the host saw at the path (null: nothing); anything else there is not replaced. */
  expect?: ApplierSig | null;
}

/** What one op did: the path's signature after it, or why it failed. */
export interface ApplierResult {
  ok: boolean;
  error?: string;
  /** The path held something else than `expect`: nothing was done. */
  conflict?: boolean;
  sig?: ApplierSig | null;
}

/** One request: a batch of operations, applied in order. */
export interface ApplierRequest {
  id: number;
  ops: ApplierOp[];
  /** Flush every file system written since the last durable request before answering. */
  durable?: boolean;
}

/** The permission bits a file or folder may get: never setuid, setgid or sticky. */
export const MODE_BITS = 0o777;

const _SYNC = "/usr/bin/sync";

/** The applier's state: the root as opened, its inode, its token. */
const _s = {
  root: "",
  ino: 0,
  temp: "",
  n: 0,
  /** The folder (relative to the root) the process stands in, checked; undefined: unknown. */
  at: undefined as string | undefined,
  /** Whether `sync -f` runs here. */
  syncfs: true,
  /** File systems written since the last durable request: device to a folder on it. */
  dirty: new Map<number, string>(),
};

function _abs(rel: string): string {
  if (!rel) return _s.root;
  return _s.root === "/" ? `/${rel}` : `${_s.root}/${rel}`;
}

function _sig(name: string): ApplierSig | null {
  try {
    const st = Deno.lstatSync(name);
    return {
      kind: st.isFile ? "file" : st.isDirectory ? "dir" : st.isSymlink ? "symlink" : "other",
      ino: st.ino ?? 0,
      size: st.size,
      mtimeMs: st.mtime?.getTime() ?? 0,
    };
  } catch {
    return null;
  }
}

/** Whether `now` is what the host saw (a folder: the same folder, whatever it holds now). */
function _expected(now: ApplierSig | null, expect: ApplierSig | null | undefined): boolean {
  if (expect === undefined) return true;
  if (now === null || expect === null) return now === expect;
  if (now.kind !== expect.kind || now.ino !== expect.ino) return false;
  return now.kind === "dir" || (now.size === expect.size && now.mtimeMs === expect.mtimeMs);
}

/**
 * Stand in the folder `dir` (relative to the root): the root, then each
 * folder on the way (made when `make`), checked AFTER each step by where
 * the process stands (its real path). Throws saying why not.
 */
function _enter(dir: string, make: boolean): void {
  const want = _abs(dir);
  if (_s.at === dir) {
    try {
      if (Deno.cwd() === want) return;
    } catch { /* removed meanwhile: walk again */ }
  }
  _s.at = undefined;
  Deno.chdir(_s.root);
  if (Deno.cwd() !== _s.root || Deno.statSync(".").ino !== _s.ino) {
    throw new Error(`${_s.root} is no longer the folder that was opened`);
  }
  let at = _s.root;
  for (const p of dir ? dir.split("/") : []) {
    at = at === "/" ? `/${p}` : `${at}/${p}`;
    if (make) {
      try {
        Deno.mkdirSync(p);
      } catch (err) {
        if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
      }
    }
    Deno.chdir(p);
    if (Deno.cwd() !== at) throw new Error(`${at}, a folder on its way, is now a link elsewhere`);
  }
  _s.at = dir;
  // Each file system written is flushed when a request asks for durability.
  const dev = Deno.statSync(".").dev;
  if (!_s.dirty.has(dev)) _s.dirty.set(dev, at);
}

function _split(rel: string): [string, string] {
  const i = rel.lastIndexOf("/");
  return i < 0 ? ["", rel] : [rel.slice(0, i), rel.slice(i + 1)];
}

function _removeSync(name: string): void {
  try {
    Deno.removeSync(name, { recursive: true });
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/** Flush the file systems of `folders` (absolute); false when `sync -f` cannot run here. */
function _syncfs(folders: string[]): boolean {
  if (!_s.syncfs || folders.length === 0) return _s.syncfs;
  try {
    const out = new Deno.Command(_SYNC, { args: ["-f", "--", ...folders], stdout: "null" })
      .outputSync();
    if (out.success) return true;
    throw new Error(new TextDecoder().decode(out.stderr).slice(0, 200));
  } catch {
    _s.syncfs = false;
    return false;
  }
}

function _fdatasync(path: string): void {
  const f = Deno.openSync(path, { read: true });
  try {
    f.syncDataSync();
  } finally {
    f.close();
  }
}

/** A batch's private folders: folder (relative) to its private folder's name there. */
type _Privates = Map<string, string>;

/** A staged temporary: where it is (relative to its folder) and whether it holds data. */
interface _Staged {
  tmp: string;
  data: boolean;
}

/** Write `o`'s new file or link in the private folder beside its path; throws when it cannot. */
function _stage(o: ApplierOp, privates: _Privates): _Staged {
  const [dir] = _split(o.rel);
  _enter(dir, true);
  let priv = privates.get(dir);
  if (priv === undefined) {
    priv = _s.temp;
    try {
      Deno.mkdirSync(priv, { mode: 0o700 });
    } catch (err) {
      // Left by an earlier batch of this applier: its own, reused.
      if (!(err instanceof Deno.errors.AlreadyExists) || !Deno.lstatSync(priv).isDirectory) {
        throw err;
      }
    }
    privates.set(dir, priv);
  }
  const tmp = `${priv}/${++_s.n}`;
  if (o.op === "link") {
    Deno.symlinkSync(Deno.readLinkSync(o.from!), tmp);
    return { tmp, data: false };
  }
  if (!Deno.lstatSync(o.from!).isFile) throw new Error("the layer's file is no longer a file");
  Deno.copyFileSync(o.from!, tmp);
  Deno.chmodSync(tmp, (o.mode ?? 0o644) & MODE_BITS);
  return { tmp, data: Deno.lstatSync(tmp).size > 0 };
}

/** Make `o`'s path what the layer holds, standing in its folder. */
function _apply(o: ApplierOp, staged: _Staged | undefined, privates: _Privates): ApplierResult {
  const removal = o.op === "remove" || o.op === "prune";
  const [dir, name] = _split(o.rel);
  try {
    _enter(dir, !removal);
  } catch (err) {
    // A folder on the way is missing (or no folder): nothing to remove there.
    const gone = err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory;
    if (gone && removal) return { ok: true, sig: null };
    throw err;
  }
  const now = _sig(name);
  // A folder made a folder is no conflict (this batch may have made it for what it holds).
  if (!(o.op === "dir" && now?.kind === "dir") && !_expected(now, o.expect)) {
    return { ok: false, conflict: true, error: "it changed in the tree meanwhile" };
  }
  const mode = (o.mode ?? (o.op === "dir" ? 0o755 : 0o644)) & MODE_BITS;
  switch (o.op) {
    case "write":
    case "link": {
      if (now?.kind === "dir") _removeSync(name);
      if (!staged && o.op === "write" && now === null && o.size === 0) {
        // Nothing to tear: made in place, exclusively (a file made meanwhile is not replaced).
        Deno.writeFileSync(name, new Uint8Array(), { createNew: true, mode });
        break;
      }
      if (!staged) {
        staged = _stage(o, privates);
        _enter(dir, false);
        if (staged.data) _fdatasync(staged.tmp);
      }
      Deno.renameSync(staged.tmp, name);
      break;
    }
    case "dir":
      if (now && now.kind !== "dir") _removeSync(name);
      if (!now || now.kind !== "dir") Deno.mkdirSync(name);
      Deno.chmodSync(name, mode);
      break;
    case "remove":
      _removeSync(name);
      break;
    case "prune": {
      if (now?.kind !== "dir") break;
      _s.at = undefined;
      Deno.chdir(name);
      if (Deno.statSync(".").ino !== now.ino) throw new Error(`${o.rel} changed meanwhile`);
      // This batch's private folder there stays: what it holds is still to be renamed.
      const keep = new Set([...o.keep ?? [], _s.temp]);
      for (const e of Deno.readDirSync(".")) if (!keep.has(e.name)) _removeSync(e.name);
      return { ok: true, sig: _sig(".") };
    }
  }
  return { ok: true, sig: _sig(name) };
}

function _error(err: unknown): ApplierResult {
  return { ok: false, error: String((err as Error)?.message ?? err).slice(0, 300) };
}

function _badRel(rel: string): boolean {
  return !rel || rel.startsWith("/") ||
    rel.split("/").some((p) => p === ".." || p === "" || p === ".");
}

/**
 * Apply one batch: stage every new file and link beside its path, flush
 * their data, then apply each operation in order; private folders go.
 */
function _batch(ops: ApplierOp[]): ApplierResult[] {
  const results: Array<ApplierResult | undefined> = ops.map((o) =>
    _badRel(o.rel) ? { ok: false, error: `not a path inside the root: ${o.rel}` } : undefined
  );
  const privates: _Privates = new Map();
  const staged: Array<_Staged | undefined> = [];
  ops.forEach((o, i) => {
    if (results[i] || (o.op !== "write" && o.op !== "link")) return;
    if (o.op === "write" && o.size === 0 && o.expect === null) return;
    try {
      staged[i] = _stage(o, privates);
    } catch { /* staged again when applied, where its folder is made */ }
  });
  // The data first, then the names: a crash in between leaves the old files.
  const data = staged.filter((s) => s?.data);
  if (data.length && !_syncfs([...privates.keys()].map(_abs))) {
    ops.forEach((o, i) => {
      if (!staged[i]?.data) return;
      try {
        _enter(_split(o.rel)[0], false);
        _fdatasync(staged[i]!.tmp);
      } catch (err) {
        results[i] = _error(err);
      }
    });
  }
  ops.forEach((o, i) => {
    if (results[i]) return;
    try {
      results[i] = _apply(o, staged[i], privates);
    } catch (err) {
      results[i] = _error(err);
    }
  });
  for (const [dir, priv] of privates) {
    try {
      _enter(dir, false);
      _removeSync(priv);
    } catch { /* its folder went: so did the private folder */ }
  }
  return results as ApplierResult[];
}

/** Make what was written since the last durable request reach the disk. */
function _durable(): void {
  const folders = [..._s.dirty.values()];
  _s.dirty.clear();
  if (_syncfs(folders)) return;
  for (const f of folders) {
    try {
      _fdatasync(f);
    } catch { /* gone */ }
  }
}

async function _main(): Promise<void> {
  _s.root = Deno.cwd();
  _s.ino = Deno.statSync(".").ino ?? 0;
  _s.temp = `${TEMP_PREFIX}${Deno.args[0] ?? crypto.randomUUID().slice(0, 16)}`;
  const enc = new TextEncoder();
  let gone = false;
  const out = async (v: unknown) => {
    if (gone) return;
    try {
      await Deno.stdout.write(enc.encode(JSON.stringify(v) + "\n"));
    } catch {
      gone = true; // the host is gone: finish what is under way, then stop
    }
  };
  await out({ ready: true, ino: _s.ino });
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of Deno.stdin.readable) {
    buf += dec.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const req = JSON.parse(line) as ApplierRequest;
      const results = _batch(req.ops ?? []);
      if (req.durable) _durable();
      await out({ id: req.id, results });
    }
  }
}

if (import.meta.main) await _main();
