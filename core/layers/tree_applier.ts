/**
 * The process that writes settled changes into one write root of the
 * user's tree (./_root_applier.ts starts it in that root, as it was opened
 * and checked).
 *
 * Where it writes: for each operation it stands in the folder that holds
 * the path (from the root, one folder at a time, made when missing) and
 * checks, after each step, where it stands (its real path, and the root's
 * inode): a name swapped for a symlink at any moment moves it elsewhere,
 * which is seen and refused before anything is written, and the write names
 * only the last component, in the folder it stands in. Operations of one
 * folder in a row share that walk (each re-checks where it stands). Its
 * file system calls are synchronous, one after another (./_applier_fs.ts):
 * the kernel serializes the names made in one folder under the folder's
 * lock, so calls at once gained nothing and each cost a hop to another
 * thread and back (measured: bench/analysis.md, issue 37's 12a). Deno
 * still opens a name by its full path, so a swap between the check and the
 * open is not seen here: what bounds it is the namespace the applier runs
 * in (./_root_applier.ts), where the root is the only writable folder.
 *
 * How it writes (replacement, never in place): a file's new content (or a
 * link) is first written in a private folder beside it (mode 0700, named
 * core/guard/temp_names.ts's prefix and this applier's token), with its
 * final mode; then the data of every such file of the batch is flushed
 * with one `syncfs` per file system (`sync -f`; without it, one
 * `fdatasync` per file); only then is each renamed over its path (or, where
 * the host saw nothing, linked there: that fails on a file made meanwhile,
 * and nothing is replaced). A rename
 * replaces the name, never the file: a hard link the tree held is broken,
 * never written through, and at every moment the path is the old file or
 * the new one, whole. A path that holds something else than the host saw
 * (`expect`) is left alone and answered as a conflict. An empty file at a
 * new path is made in place (there is no content to tear), exclusively. A
 * request marked `durable` ends with a `syncfs` of every file system it
 * wrote: its answer means the changes are on disk. Private folders are
 * removed at the end of each batch; one left by a kill is found again by
 * the host's journal (./_apply_journal.ts). When the host is gone (stdin
 * closes), the batch under way is finished and the process exits. A folder
 * whose new mode shuts its owner out (`chmod 600 dir`) would stop what goes
 * in it: it is open to its owner until the durable request that ends the
 * settlement gives it its mode.
 *
 * Protocol: one JSON request per line on stdin, one JSON answer per line
 * on stdout (./_applier_protocol.ts). Its one argument: the token of its
 * private folders (`deno run tree_applier.ts TOKEN`, or `corral __applier
 * TOKEN` when compiled: core/base/self_run.ts). Modes are applied exactly
 * as asked (`mode & 0o7777`): the host's judge has masked them
 * (./_mode_rules.ts).
 *
 * @module
 */
import {
  absOf,
  applier,
  CONFLICT,
  enter,
  expected,
  fdatasync,
  makeEmpty,
  MODE_BITS,
  place,
  privateFolder,
  type Privates,
  removeSync,
  sigSync,
  splitRel,
  stage,
  type Staged,
  syncfs,
} from "./_applier_fs.ts";
import type { ApplierOp, ApplierRequest, ApplierResult } from "./_applier_protocol.ts";

/** An empty file where the host saw nothing: made in place, with nothing to stage. */
function _emptyNew(o: ApplierOp): boolean {
  return o.op === "write" && o.size === 0 && o.expect === null;
}

/** Make `o`'s path what the layer holds, standing in its folder (one at a time, in order). */
function _apply(o: ApplierOp, privates: Privates): ApplierResult {
  const removal = o.op === "remove" || o.op === "prune";
  const [dir, name] = splitRel(o.rel);
  try {
    enter(dir, !removal);
  } catch (err) {
    // A folder on the way is missing (or no folder): nothing to remove there.
    const gone = err instanceof Deno.errors.NotFound || err instanceof Deno.errors.NotADirectory;
    if (gone && removal) return { ok: true, sig: null };
    throw err;
  }
  // Where the host saw nothing, nothing is looked at: the write itself fails on what is there.
  const fresh = o.expect === null && (o.op === "write" || o.op === "link");
  const now = fresh ? null : sigSync(name);
  // A folder made a folder is no conflict (this batch may have made it for what it holds).
  if (!fresh && !(o.op === "dir" && now?.kind === "dir") && !expected(now, o.expect)) {
    return CONFLICT;
  }
  const mode = (o.mode ?? (o.op === "dir" ? 0o755 : 0o644)) & MODE_BITS;
  switch (o.op) {
    case "write":
    case "link": {
      // Not staged with its batch (its folder was no folder yet): staged and flushed alone.
      if (now?.kind === "dir") removeSync(name);
      const s = stage(o, privateFolder(dir, privates));
      if (s.data) fdatasync(s.tmp);
      return place(s, name, fresh);
    }
    case "dir":
      if (now && now.kind !== "dir") removeSync(name);
      if (!now || now.kind !== "dir") Deno.mkdirSync(name);
      _chmodDir(o.rel, name, mode);
      break;
    case "remove":
      removeSync(name);
      break;
    case "prune": {
      if (now?.kind !== "dir") break;
      applier.at = undefined;
      Deno.chdir(name);
      if (Deno.statSync(".").ino !== now.ino) throw new Error(`${o.rel} changed meanwhile`);
      // This batch's private folder there stays: what it holds is still to be renamed.
      const keep = new Set([...o.keep ?? [], applier.temp]);
      for (const e of Deno.readDirSync(".")) if (!keep.has(e.name)) removeSync(e.name);
      return { ok: true, sig: sigSync(".") };
    }
  }
  return { ok: true, sig: sigSync(name) };
}

/**
 * Folders whose mode shuts their owner out (no read, write or search for
 * it), by path: what goes in them (in this batch or a later one) could not
 * be written, nor the private folder removed. Each is opened to its owner
 * (`mode | 0o700`, never more for group or others) until the durable
 * request that ends a settlement gives it its mode, deepest first.
 */
const _shut = new Map<string, { mode: number; ino: number }>();

/** Give the folder `name` (`rel`) its mode: now, or at the durable request when it shuts out. */
function _chmodDir(rel: string, name: string, mode: number): void {
  const st = Deno.lstatSync(name);
  if (((st.mode ?? 0) & MODE_BITS) === mode) return _shut.delete(rel), undefined;
  const open = (mode & 0o700) === 0o700;
  Deno.chmodSync(name, open ? mode : mode | 0o700);
  if (open) _shut.delete(rel);
  else _shut.set(rel, { mode, ino: st.ino ?? 0 });
}

/** The folders that shut their owner out get their mode, deepest first. */
function _closeShut(): void {
  const rels = [..._shut.keys()].sort((a, b) => b.split("/").length - a.split("/").length);
  for (const rel of rels) {
    const { mode, ino } = _shut.get(rel)!;
    _shut.delete(rel);
    try {
      const [dir, name] = splitRel(rel);
      enter(dir, false);
      if (Deno.lstatSync(name).ino === ino) Deno.chmodSync(name, mode);
    } catch { /* gone or replaced: nothing to close */ }
  }
}

function _error(err: unknown): ApplierResult {
  return { ok: false, error: String((err as Error)?.message ?? err).slice(0, 300) };
}

function _badRel(rel: string): boolean {
  return !rel || rel.startsWith("/") ||
    rel.split("/").some((p) => p === ".." || p === "" || p === ".");
}

/** Stage the batch's new files and links, folder by folder. */
function _stageAll(ops: ApplierOp[], skip: unknown[], privates: Privates) {
  const staged: Array<Staged | undefined> = [];
  const byDir = new Map<string, number[]>();
  ops.forEach((o, i) => {
    if (skip[i] || (o.op !== "write" && o.op !== "link") || _emptyNew(o)) return;
    const dir = splitRel(o.rel)[0];
    const list = byDir.get(dir);
    if (list) list.push(i);
    else byDir.set(dir, [i]);
  });
  for (const [dir, idx] of byDir) {
    let priv: string;
    try {
      enter(dir, true);
      priv = privateFolder(dir, privates);
    } catch {
      continue; // staged when applied, once its folder is made
    }
    for (const i of idx) {
      try {
        staged[i] = stage(ops[i], priv);
      } catch { /* staged again when applied */ }
    }
  }
  return staged;
}

/**
 * Apply one batch: stage every new file and link beside its path, flush
 * their data, then apply each operation in order; the private folders go.
 */
function _batch(ops: ApplierOp[]): ApplierResult[] {
  const results: Array<ApplierResult | undefined> = ops.map((o) =>
    _badRel(o.rel) ? { ok: false, error: `not a path inside the root: ${o.rel}` } : undefined
  );
  const privates: Privates = new Map();
  const staged = _stageAll(ops, results, privates);
  // The data first, then the names: a crash in between leaves the old files.
  if (staged.some((s) => s?.data) && !syncfs([...privates.keys()].map(absOf))) {
    ops.forEach((o, i) => {
      if (!staged[i]?.data) return;
      try {
        enter(splitRel(o.rel)[0], false);
        fdatasync(staged[i]!.tmp);
      } catch (err) {
        results[i] = _error(err);
      }
    });
  }
  for (const [i, o] of ops.entries()) {
    if (results[i]) continue;
    const s = staged[i];
    try {
      if (!s && !_emptyNew(o)) {
        results[i] = _apply(o, privates);
        continue;
      }
      const [dir, name] = splitRel(o.rel);
      enter(dir, true);
      const fresh = o.expect === null;
      const now = fresh ? null : sigSync(name);
      if (!expected(now, o.expect)) {
        results[i] = CONFLICT;
        continue;
      }
      if (now?.kind === "dir") removeSync(name);
      results[i] = s ? place(s, name, fresh) : makeEmpty(name, (o.mode ?? 0o644) & MODE_BITS);
    } catch (err) {
      results[i] = _error(err);
    }
  }
  for (const [dir, priv] of privates) {
    try {
      enter(dir, false);
      removeSync(priv);
    } catch { /* its folder went: so did the private folder */ }
  }
  return results as ApplierResult[];
}

/** Make what was written since the last durable request reach the disk. */
function _durable(): void {
  const folders = [...applier.dirty.values()];
  applier.dirty.clear();
  if (syncfs(folders)) return;
  for (const f of folders) {
    try {
      fdatasync(f);
    } catch { /* gone */ }
  }
}

async function _main(token: string | undefined): Promise<void> {
  // By its file, not core/guard/'s face: the applier's namespace binds only the files it
  // runs (./_root_applier.ts `_MODULES`), and the face would load all of core/guard/.
  const { TEMP_PREFIX } = await import("../guard/temp_names.ts");
  applier.root = Deno.cwd();
  applier.ino = Deno.statSync(".").ino ?? 0;
  applier.temp = `${TEMP_PREFIX}${token ?? crypto.randomUUID().slice(0, 16)}`;
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
  await out({ ready: true, ino: applier.ino });
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
      if (req.durable) _closeShut(), _durable();
      await out({ id: req.id, results });
    }
  }
}

/**
 * Serve the protocol on stdin and stdout until stdin ends (a compiled
 * corral: `corral __applier TOKEN`); `token` names its private folders.
 */
export function runTreeApplier(token?: string): Promise<void> {
  return _main(token);
}

if (import.meta.main) await _main(Deno.args[0]);
