/**
 * The file system steps of the applier process (./tree_applier.ts): where
 * it stands and how it gets there, checked after every step; a private
 * folder per folder written; staging a new file or link there; putting it
 * in place by rename (over what was there) or by link (where nothing was,
 * which fails on anything made meanwhile); flushing data. Loaded only by
 * the applier, inside its namespace.
 *
 * @module
 */
import type { ApplierOp, ApplierResult, ApplierSig } from "./_applier_protocol.ts";

/**
 * The permission bits applied, exactly as asked: the host's judge has
 * masked them already (core/layers/_mode_rules.ts: no setuid, and setgid or
 * sticky only on a folder that had them).
 */
export const MODE_BITS = 0o7777;

const _SYNC = "/usr/bin/sync";

/** The applier's state: the root as opened, its inode, its private folders' name. */
export const applier = {
  root: "",
  ino: 0,
  /** The name of every private folder of this applier. */
  temp: "",
  n: 0,
  /** The folder (relative to the root) the process stands in, checked; undefined: unknown. */
  at: undefined as string | undefined,
  /** Whether `sync -f` runs here. */
  syncfs: true,
  /** File systems written since the last durable request: device to a folder on it. */
  dirty: new Map<number, string>(),
};

/** The answer for a path that holds something else than the host saw. */
export const CONFLICT: ApplierResult = {
  ok: false,
  conflict: true,
  error: "it changed in the tree meanwhile",
};

/** An absolute path for `rel` (relative to the root). */
export function absOf(rel: string): string {
  if (!rel) return applier.root;
  return applier.root === "/" ? `/${rel}` : `${applier.root}/${rel}`;
}

/** `rel` as its folder and its last name. */
export function splitRel(rel: string): [string, string] {
  const i = rel.lastIndexOf("/");
  return i < 0 ? ["", rel] : [rel.slice(0, i), rel.slice(i + 1)];
}

function _sigOf(st: Deno.FileInfo): ApplierSig {
  return {
    kind: st.isFile ? "file" : st.isDirectory ? "dir" : st.isSymlink ? "symlink" : "other",
    ino: st.ino ?? 0,
    size: st.size,
    mtimeMs: st.mtime?.getTime() ?? 0,
  };
}

/** What `name` is (relative to where the process stands), or null. */
export function sigSync(name: string): ApplierSig | null {
  try {
    return _sigOf(Deno.lstatSync(name));
  } catch {
    return null;
  }
}

/** Whether `now` is what the host saw (a folder: the same folder, whatever it holds now). */
export function expected(now: ApplierSig | null, expect: ApplierSig | null | undefined): boolean {
  if (expect === undefined) return true;
  if (now === null || expect === null) return now === expect;
  if (now.kind !== expect.kind || now.ino !== expect.ino) return false;
  return now.kind === "dir" || (now.size === expect.size && now.mtimeMs === expect.mtimeMs);
}

/**
 * Stand in the folder `dir` (relative to the root): the root, then each
 * folder on the way (made when `make`), checked AFTER each step by where
 * the process stands (its real path). Throws saying why not. Standing
 * there already, only where it stands is checked again.
 */
export function enter(dir: string, make: boolean): void {
  if (applier.at === dir) {
    try {
      if (Deno.cwd() === absOf(dir)) return;
    } catch { /* removed meanwhile: walk again */ }
  }
  applier.at = undefined;
  Deno.chdir(applier.root);
  if (Deno.cwd() !== applier.root || Deno.statSync(".").ino !== applier.ino) {
    throw new Error(`${applier.root} is no longer the folder that was opened`);
  }
  let at = applier.root;
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
  applier.at = dir;
  // Each file system written is flushed when a request asks for durability.
  const dev = Deno.statSync(".").dev;
  if (!applier.dirty.has(dev)) applier.dirty.set(dev, at);
}

/** Remove `name` and what it holds; nothing there is no error. */
export function removeSync(name: string): void {
  try {
    Deno.removeSync(name, { recursive: true });
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/** Flush the file systems of `folders` (absolute); false when `sync -f` cannot run here. */
export function syncfs(folders: string[]): boolean {
  if (!applier.syncfs || folders.length === 0) return applier.syncfs;
  try {
    const out = new Deno.Command(_SYNC, { args: ["-f", "--", ...folders], stdout: "null" })
      .outputSync();
    if (out.success) return true;
  } catch { /* not here */ }
  applier.syncfs = false;
  return false;
}

/** Flush one file's (or folder's) data. */
export function fdatasync(path: string): void {
  const f = Deno.openSync(path, { read: true });
  try {
    f.syncDataSync();
  } finally {
    f.close();
  }
}

/** A batch's private folders: folder (relative) to its private folder's name there. */
export type Privates = Map<string, string>;

/** A staged temporary: where it is (relative to its folder) and whether it holds data. */
export interface Staged {
  tmp: string;
  data: boolean;
}

/**
 * The private folder in the folder where the process stands (`dir`),
 * made on its first use in a batch.
 */
export function privateFolder(dir: string, privates: Privates): string {
  let priv = privates.get(dir);
  if (priv !== undefined) return priv;
  priv = applier.temp;
  try {
    Deno.mkdirSync(priv, { mode: 0o700 });
  } catch (err) {
    // Left by an earlier batch of this applier: its own, reused.
    if (!(err instanceof Deno.errors.AlreadyExists) || !Deno.lstatSync(priv).isDirectory) {
      throw err;
    }
  }
  privates.set(dir, priv);
  return priv;
}

/**
 * Write `o`'s new file (its final mode) or link in the private folder
 * `priv` of the folder where the process stands; throws when it cannot.
 */
export function stage(o: ApplierOp, priv: string): Staged {
  const tmp = `${priv}/${++applier.n}`;
  if (o.op === "link") {
    Deno.symlinkSync(Deno.readLinkSync(o.from!), tmp);
    return { tmp, data: false };
  }
  const src = Deno.lstatSync(o.from!);
  if (!src.isFile) throw new Error("the layer's file is no longer a file");
  Deno.copyFileSync(o.from!, tmp);
  // The copy has the layer's mode: set only when that is not the mode it gets.
  const mode = (o.mode ?? 0o644) & MODE_BITS;
  if (((src.mode ?? 0) & 0o7777) !== mode) Deno.chmodSync(tmp, mode);
  return { tmp, data: src.size > 0 || (o.size ?? 1) > 0 };
}

/**
 * Put a staged file or link at `name` (where the process stands): over
 * what is there, or, where the host saw nothing (`fresh`), by a link that
 * fails on anything made meanwhile (then nothing is replaced).
 */
export function place(staged: Staged, name: string, fresh: boolean): ApplierResult {
  if (!fresh) Deno.renameSync(staged.tmp, name);
  else {
    try {
      Deno.linkSync(staged.tmp, name);
    } catch (err) {
      if (err instanceof Deno.errors.AlreadyExists || sigSync(name)) return CONFLICT;
      Deno.renameSync(staged.tmp, name); // no hard links on this file system
    }
  }
  return { ok: true, sig: sigSync(name) };
}

/** Make an empty file at a new path (nothing to tear), exclusively. */
export function makeEmpty(name: string, mode: number): ApplierResult {
  try {
    Deno.writeFileSync(name, new Uint8Array(), { createNew: true, mode });
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists) return CONFLICT;
    throw err;
  }
  // The umask narrowed the mode it was made with: set as asked.
  const st = Deno.lstatSync(name);
  if ((st.mode! & 0o7777) === mode) return { ok: true, sig: _sigOf(st) };
  Deno.chmodSync(name, mode);
  return { ok: true, sig: sigSync(name) };
}
