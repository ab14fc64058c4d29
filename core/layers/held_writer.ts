/**
 * Holding a settlement for review instead of applying it
 * (./settle_layers.ts, when ./hold_state.ts says so): what changed in each
 * upper layer since the last settlement is copied, as the overlay left it
 * (files, folders with their modes, links, whiteouts, opaque folders), into
 * a new held set (./held_store.ts) by GNU tar, with the view of the tree it
 * was made on, so that applying it later (./held_apply.ts) judges and
 * conflicts exactly as this settlement would have. Nothing reaches the tree.
 *
 * @module
 */
import { join, relative } from "node:path";
import { isWithin } from "../base/mod.ts";
import { type ChangeReport, emptyReport, REPORT_PATHS } from "./change_report.ts";
import type { HoldRequest } from "./hold_state.ts";
import {
  heldBaseFor,
  type HeldEntry,
  type HeldManifest,
  newHeldDir,
  removeHeld,
  writeManifest,
} from "./held_store.ts";
import {
  commitRemovals,
  commitSeen,
  countLayer,
  diffLayer,
  type LayerMemory,
  type LayerOp,
} from "./_layer_diff.ts";
import type { LayerQuota } from "./layer_quota.ts";
import type { LayerRoot } from "./layer_dirs.ts";
import type { LayerRules } from "./_settle_options.ts";
import { lowerSig, type Sig } from "./_tree_sig.ts";
import { fileClockNow } from "./_file_clock.ts";
import { listRaw } from "./_raw_list.ts";
import { opaqueFolders } from "./_upper_walk.ts";
import { findBwrap, namespaceBase } from "../jail/mod.ts";

/** What a root's view of the tree rested on when its changes were held. */
export interface HeldRootView {
  /** The root's inode when the sandbox started. */
  ino: number;
  /** Since when the view of every path it keeps no signature for was taken. */
  epoch: number;
  /** The tree's signature each path of the view rests on (null: absent; undefined: none kept). */
  view: { get(abs: string): Sig | null | undefined };
}

/** One new held set, filled root by root (a batch of operations at a time). */
export class HeldWriter {
  readonly id: string;
  readonly dir: string;
  readonly #m: HeldManifest;

  private constructor(id: string, dir: string, m: HeldManifest) {
    this.id = id;
    this.dir = dir;
    this.#m = m;
  }

  /** A new set for the layers over `roots`, judged by `rules`, held for `holds`. */
  static open(roots: string[], rules: LayerRules, holds: HoldRequest[]): HeldWriter {
    const { id, dir } = newHeldDir(heldBaseFor(roots));
    const first = holds[0];
    return new HeldWriter(id, dir, {
      version: 1,
      id,
      workspace: rules.workspace,
      time: new Date().toISOString(),
      toolset: first?.toolset ?? "",
      tools: [...new Set(holds.map((h) => h.tool))],
      by: [...new Set(holds.map((h) => h.by))],
      ...(first?.identity ? { identity: first.identity } : {}),
      ...(first?.session ? { session: first.session } : {}),
      rules: {
        workspace: rules.workspace,
        entries: [...rules.entries],
        trust: rules.trust.map((t) => ({ path: t.path, what: t.what })),
        pathDirs: [...rules.pathDirs],
        grantPaths: [...rules.grantPaths],
      },
      roots: roots.map((root) => ({
        root,
        ino: 0,
        epoch: 0,
        view: [],
        births: {},
        entries: [],
        notHeld: [],
      })),
    });
  }

  /** Hold `ops` (of the upper layer of `layer`, the `i`th root), resting on `v`. */
  async add(i: number, layer: LayerRoot, ops: LayerOp[], v: HeldRootView): Promise<void> {
    const r = this.#m.roots[i];
    Object.assign(r, { ino: v.ino, epoch: v.epoch });
    const upper = join(layer.dir, "u"), into = join(this.dir, String(i), "u");
    await Deno.mkdir(into, { recursive: true, mode: 0o700 });
    const byRel = new Map<string, LayerOp>();
    const vanished: LayerOp[] = [];
    for (const op of ops) {
      if (op.vanished) {
        if (v.view.get(op.abs) !== undefined) vanished.push(op); // else never applied
      } else if (op.kind === "other") {
        r.notHeld.push({ path: this.#shown(op.abs), why: _otherWhy(op) });
      } else if (op.kind !== "prune" || !byRel.has(op.rel)) byRel.set(op.rel, op);
    }
    const rels = _withParents([...byRel.keys()]);
    // The folders on the way as plain folders (an opaque one would drop what it hid again).
    const modes: Array<[string, number]> = [];
    for (const rel of rels.filter((r) => !byRel.has(r))) {
      const st = await Deno.lstat(join(upper, rel)).catch(() => null);
      if (!st?.isDirectory) continue;
      await Deno.mkdir(join(into, rel), { mode: 0o700 }).catch(() => {});
      modes.unshift([join(into, rel), (st.mode ?? 0o755) & 0o7777]);
    }
    await _copy(upper, into, rels.filter((r) => byRel.has(r)));
    rels.push(...await _whiteouts(into, layer.root, vanished));
    for (const [at, mode] of modes) await Deno.chmod(at, mode); // deepest first
    const dirs = rels.filter((rel) => byRel.get(rel)?.kind === "dir");
    const opaque = await opaqueFolders(into, dirs);
    const held = new Set(r.entries.map((e) => e.rel));
    const fresh: HeldEntry[] = [];
    for (const rel of [...rels, ...vanished.map((op) => op.rel)]) {
      if (held.has(rel)) continue;
      const e = await _entry(into, rel, layer.root, byRel.get(rel), opaque.has(rel));
      if (!e) continue;
      const was = byRel.get(rel)?.entry?.kind;
      if (was && was !== e.kind) {
        // Swapped while it was copied (its processes still run): held at the next settlement.
        throw new Error(`the changes could not be held: ${rel} changed while it was read`);
      }
      held.add(rel);
      r.entries.push(e);
      fresh.push(e);
      const birth = byRel.get(rel)?.entry?.birthMs ??
        (await Deno.lstat(join(upper, rel)).catch(() => null))?.birthtime?.getTime() ?? 0;
      r.births[rel] = birth;
    }
    // The view of every path held and, where the tree has a folder, of every path below it
    // (what a removal, a folder made anew or a file in its place takes).
    const seen = new Set(r.view.map(([abs]) => abs));
    const note = (abs: string) => {
      const sig = v.view.get(abs);
      if (sig !== undefined && !seen.has(abs)) r.view.push([abs, sig]), seen.add(abs);
    };
    for (const e of fresh) {
      const abs = join(layer.root, e.rel);
      note(abs);
      if (e.kind === "dir" && !e.opaque) continue;
      if ((await lowerSig(abs))?.kind !== "dir") continue;
      for (const x of await listRaw(abs)) if (x.utf8) note(join(abs, x.rel));
    }
  }

  /**
   * The settlement's report: the set's ID and what it holds (nothing
   * applied); an empty report, the folder removed, when it holds nothing.
   */
  async close(): Promise<ChangeReport> {
    const shown: string[] = [];
    let count = 0;
    for (const r of this.#m.roots) {
      for (const e of r.entries) {
        if (e.change === "=") continue;
        count++;
        if (shown.length < REPORT_PATHS) shown.push(e.change + this.#shown(join(r.root, e.rel)));
      }
      count += r.notHeld.length;
    }
    if (count === 0) {
      await removeHeld(this.dir);
      return emptyReport();
    }
    await writeManifest(this.dir, this.#m);
    return { ...emptyReport(), held: { id: this.id, entries: count, paths: shown } };
  }

  /** Give up: the set's folder goes. */
  async abort(): Promise<void> {
    await removeHeld(this.dir).catch(() => {});
  }

  #shown(abs: string): string {
    const ws = this.#m.workspace;
    return isWithin(abs, ws) && abs !== ws ? relative(ws, abs) : abs;
  }
}

/** The state of a sandbox's layers a hold reads, and commits once held (./settle_layers.ts). */
export interface HoldingState {
  /** What each root's layer held when last settled. */
  memory: Map<string, LayerMemory>;
  /** Each root's inode when the sandbox started. */
  inos: Map<string, number>;
  /** Since when each root's view was taken (set to the hold's start once held). */
  epochs: Map<string, number>;
  /** The tree's signature each path of the view rests on. */
  view: HeldRootView["view"];
}

/**
 * Hold what changed in the layers `roots` for `holds` since `state`: each
 * layer counted against `quota` first (past it nothing is held, even with
 * `layer_partial`: a held set is whole; the report says `over`), then
 * copied into a new held set; `state` is committed only once the whole set
 * is written ({@link holdLayers}).
 */
export async function holdChanges(
  roots: LayerRoot[],
  holds: HoldRequest[],
  rules: LayerRules,
  artifacts: ReadonlySet<string>,
  quota: LayerQuota,
  state: HoldingState,
): Promise<ChangeReport> {
  for (const l of roots) {
    const { count } = await countLayer(l, state.memory.get(l.root)!, artifacts, quota);
    if (count.over) return { ...emptyReport(), over: count.text(false, true) };
  }
  return await holdLayers(roots, rules, holds, async (l) => {
    const started = fileClockNow(l.dir), memory = state.memory.get(l.root)!;
    const { ops } = await diffLayer(l, memory, artifacts);
    const [ino, epoch] = [state.inos.get(l.root)!, state.epochs.get(l.root)!];
    const commit = () => {
      commitSeen(memory, ops.flatMap((op) => op.kind !== "remove" && op.entry ? [op.entry] : []));
      commitRemovals(memory, ops.filter((op) => op.kind === "remove"));
      state.epochs.set(l.root, started);
    };
    return { ops, view: { ino, epoch, view: state.view }, commit };
  });
}

/**
 * Hold what changed in the layers `roots` for `holds`: `each` reads one
 * layer's operations (and commits them as settled once the whole set is
 * held). Returns the settlement's report ({@link HeldWriter.close}).
 */
export async function holdLayers(
  roots: LayerRoot[],
  rules: LayerRules,
  holds: HoldRequest[],
  each: (l: LayerRoot) => Promise<{ ops: LayerOp[]; view: HeldRootView; commit(): void }>,
): Promise<ChangeReport> {
  const w = HeldWriter.open(roots.map((l) => l.root), rules, holds);
  const commits: Array<() => void> = [];
  let report: ChangeReport;
  try {
    for (const [i, l] of roots.entries()) {
      const one = await each(l);
      await w.add(i, l, one.ops, one.view);
      commits.push(one.commit);
    }
    report = await w.close();
  } catch (err) {
    await w.abort(); // nothing committed: the next settlement finds it all again
    throw err;
  }
  for (const commit of commits) commit();
  return report;
}

/** `rels` with every folder on their way, parents first. */
function _withParents(rels: string[]): string[] {
  const all = new Set<string>();
  for (const rel of rels) {
    const parts = rel.split("/");
    for (let n = 1; n <= parts.length; n++) all.add(parts.slice(0, n).join("/"));
  }
  return [...all].sort((a, b) => a.split("/").length - b.split("/").length || (a < b ? -1 : 1));
}

/** Every namespace but a user one (bwrap makes one for --unshare-all, even for root). */
const _ROOT_NS = [
  "--unshare-ipc",
  "--unshare-pid",
  "--unshare-net",
  "--unshare-uts",
  "--unshare-cgroup-try",
  "--die-with-parent",
  "--new-session",
  ...["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"],
];

/** The overlay's marks a hold keeps: opaque folders, and what was copied up (./_copy_ups.ts). */
const _TAR_XATTRS = [
  "--xattrs",
  "--xattrs-include=trusted.overlay.opaque",
  "--xattrs-include=user.overlay.opaque",
  "--xattrs-include=trusted.overlay.origin",
  "--xattrs-include=user.overlay.origin",
];

/**
 * Copy `rels` of `from` into `to` as they are (whiteouts and opaque
 * folders too), by GNU tar. The layer is the sandbox's, and its processes
 * may still run: tar reads it in a namespace of its own where nothing but
 * the layer and the system's programs exist, so a folder swapped for a link
 * meanwhile leads nowhere (as the applier's namespace does,
 * ./_root_applier.ts).
 */
async function _copy(from: string, to: string, rels: string[]): Promise<void> {
  if (rels.length === 0) return;
  const env = { PATH: "/usr/bin:/bin", LC_ALL: "C" };
  const bwrap = await findBwrap();
  if (!bwrap) throw new Error("the changes could not be held: bubblewrap is needed to read them");
  const system = ["/bin", "/lib", "/lib64", "/sbin"].flatMap((p) => {
    const st = (() => {
      try {
        return Deno.lstatSync(p);
      } catch {
        return null;
      }
    })();
    return !st ? [] : st.isSymlink ? ["--symlink", Deno.readLinkSync(p), p] : ["--ro-bind", p, p];
  });
  const pack = new Deno.Command(bwrap, {
    args: [
      // Root reads the overlay's trusted.* marks only in the first user namespace, with this
      // one capability (bwrap would make a user namespace of --unshare-all); a user's are user.*.
      ...(Deno.uid() === 0
        ? [..._ROOT_NS, "--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN"]
        : namespaceBase(false)),
      ...["--ro-bind", "/usr", "/usr", ...system, "--ro-bind", from, from, "--"],
      // (-C before the list: tar's options are positional.)
      ...["/usr/bin/tar", ..._TAR_XATTRS, "-cf", "-", "-C", from, "--no-recursion"],
      ...["--ignore-failed-read", "--null", "-T", "-"],
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env,
  }).spawn();
  const unpack = new Deno.Command("tar", {
    args: [..._TAR_XATTRS, "--no-same-owner", "-xpf", "-", "-C", to],
    stdin: "piped",
    stdout: "null",
    stderr: "piped",
    clearEnv: true,
    env,
  }).spawn();
  const piped = pack.stdout.pipeTo(unpack.stdin);
  const w = pack.stdin.getWriter();
  await w.write(new TextEncoder().encode(rels.map((r) => `./${r}\0`).join("")));
  await w.close();
  const text = (r: ReadableStream<Uint8Array>) => new Response(r).text();
  const [a, b, aErr, bErr] = await Promise.all([
    pack.status,
    unpack.status,
    text(pack.stderr),
    text(unpack.stderr),
    piped,
  ]);
  // (1: a file changed or vanished while it was read: held as tar found it.)
  if (!b.success || (a.code !== 0 && a.code !== 1)) {
    const why = (b.success ? aErr : bErr).trim().split("\n")[0];
    throw new Error(`the changes could not be held: tar: ${why}`);
  }
}

/**
 * Whiteouts for paths that left the layer after they were applied (the
 * tree still has them); returns the folders made on their way.
 */
async function _whiteouts(into: string, root: string, ops: LayerOp[]): Promise<string[]> {
  const sorted = [...ops].sort((a, b) => a.rel.split("/").length - b.rel.split("/").length);
  const done: string[] = [], made: string[] = [];
  for (const op of sorted) {
    if (done.some((d) => op.rel.startsWith(d + "/"))) continue; // removed with its folder
    for (const dir of _withParents([op.rel]).slice(0, -1)) {
      if (await Deno.lstat(join(into, dir)).then(() => true, () => false)) continue;
      const mode = (await Deno.stat(join(root, dir)).catch(() => null))?.mode ?? 0o755;
      await Deno.mkdir(join(into, dir));
      await Deno.chmod(join(into, dir), mode & 0o7777);
      made.push(dir);
    }
    const out = await new Deno.Command("mknod", {
      args: ["-m", "000", "--", join(into, op.rel), "c", "0", "0"],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin" },
    }).output();
    if (!out.success) {
      const why = new TextDecoder().decode(out.stderr).trim();
      throw new Error(`the changes could not be held: a removal cannot be recorded: ${why}`);
    }
    done.push(op.rel);
  }
  return made;
}

/** The manifest's entry for `rel` as held in `into` (undefined: it was gone before the copy). */
async function _entry(
  into: string,
  rel: string,
  root: string,
  op: LayerOp | undefined,
  opaque: boolean,
): Promise<HeldEntry | undefined> {
  const at = join(into, rel);
  const st = await Deno.lstat(at).catch(() => null);
  if (!st) return undefined;
  const mode = (st.mode ?? 0) & 0o7777;
  const now = await lowerSig(join(root, rel));
  if (st.isCharDevice && (st.rdev ?? -1) === 0) {
    return { rel, kind: "whiteout", change: "-", mode };
  }
  if (st.isDirectory) {
    const same = now?.kind === "dir" && !opaque &&
      (((await Deno.lstat(join(root, rel))).mode ?? 0) & 0o7777) === mode;
    const change = now === null ? "+" : !op || same ? "=" : "~";
    return { rel, kind: "dir", change, mode, ...(opaque ? { opaque } : {}) };
  }
  const change = now ? "~" : "+";
  if (st.isSymlink) return { rel, kind: "symlink", change, mode, target: await Deno.readLink(at) };
  if (!st.isFile) return { rel, kind: "other", change, mode };
  return { rel, kind: "file", change, mode, size: st.size, sha256: await fileSha256(at) };
}

/**
 * SHA-256 (hex) of the file `path`, read as a stream (node:crypto, loaded
 * only when a hold or an apply needs it).
 */
export async function fileSha256(path: string): Promise<string> {
  const { createHash } = await import("node:crypto");
  const h = createHash("sha256");
  const f = await Deno.open(path);
  for await (const chunk of f.readable) h.update(chunk); // (the stream closes the file)
  return h.digest("hex");
}

function _otherWhy(op: LayerOp): string {
  return op.entry?.notUtf8
    ? "its name is not UTF-8: corral applies names as UTF-8 only, so it was not held"
    : "not a file, folder or link";
}
