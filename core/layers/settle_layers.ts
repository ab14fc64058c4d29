/**
 * Settling a sandbox's write layers: after each call (and when the sandbox
 * ends), what the sandbox wrote in its upper layers is judged
 * (./change_rules.ts, ./git_rules.ts) and applied to the user's tree, one
 * write root at a time under its lock (./tree_lock.ts). A path that someone
 * else changed since the sandbox's view of it was taken is a conflict: the
 * other version stays in the tree, the sandbox's is kept in corral's
 * conflicts folder, and the sandbox is marked stale, to start afresh.
 *
 * What the sandbox's view of a path rests on: the tree's signature when
 * corral last applied or saw it for this sandbox (or applied it for
 * another, for a path this sandbox did not hold), else the time the path
 * entered the layer (its copy-up), else the previous settlement's start.
 *
 * @module
 */
import { dirname, join, relative } from "node:path";
import { isWithin } from "../guard/is_within.ts";
import { keepConflict, lowerSig, sameSig, type Sig } from "./tree_sig.ts";
import {
  type ChangeReport,
  emptyReport,
  isEmptyReport,
  mergeReports,
  REPORT_PATHS,
} from "./change_report.ts";
import { followLayers } from "./layer_follow.ts";
import type { RuleContext } from "./change_rules.ts";
import { judgeGitRefs } from "./git_settle.ts";
import { userGitEnv } from "./hooks_folders.ts";
import { LayerJudge } from "./layer_judge.ts";
import { applyInRoot, leaveApplier, useApplier } from "./root_applier.ts";
import type { ApplierOp, ApplierResult } from "./tree_applier.ts";
import { diffLayer, type LayerMemory, layerMemory, type LayerOp } from "./layer_diff.ts";
import { staleInView } from "./layer_freshness.ts";
import type { LayerDirs, LayerRoot } from "./layer_dirs.ts";
import { withTreeLock } from "./tree_lock.ts";
import { type HoldRequest, HoldSet } from "./hold_state.ts";
import { holdLayers } from "./held_writer.ts";

/** What the rules of a sandbox's layers are (the root and what git says are added per layer). */
export type LayerRules = Omit<RuleContext, "root" | "hooksFolders" | "gitDirs" | "configFiles">;

/** What a {@link SandboxLayers} is made of. */
export interface SandboxLayersOptions {
  dirs: LayerDirs;
  /** Mount points made in the layers (core/guard/grant_mounts.ts): never applied. */
  artifacts: string[];
  rules: LayerRules;
  /** Where conflicting versions are kept. */
  conflictsDir: string;
  /**
   * Held changes being applied (./held_apply.ts): the view of the tree they
   * were made on (each root's epoch, the signatures, when each entry
   * entered the layer), so that they are judged as their settlement would have been.
   */
  resume?: {
    epochs: Map<string, number>;
    view: Map<string, Sig | null>;
    births: Map<string, number>;
  };
  /** What applies the changes (default ./root_applier.ts; ./held_apply.ts's dry run to show them). */
  applier?: typeof applyInRoot;
}

/** One applied change, told to the other sandboxes over the same root. */
export interface Applied {
  abs: string;
  sig: Sig | null;
  /** A path made or removed (not only rewritten): their views may hold it stale. */
  named: boolean;
}

/** The live layers of this process, by write root: each hears the others' applies. */
const _live = new Map<string, Set<SandboxLayers>>();

/** A sandbox's write layers on the host side. */
export class SandboxLayers {
  readonly dirs: LayerDirs;
  readonly #o: SandboxLayersOptions;
  readonly #artifacts: Set<string>;
  readonly #memory = new Map<string, LayerMemory>();
  /** The tree's signature each path of this sandbox's view rests on (null: absent). */
  readonly #view = new Map<string, Sig | null>();
  readonly #epoch = new Map<string, number>();
  /** Each root's inode when the sandbox started: a root replaced since is not written. */
  readonly #inos = new Map<string, number>();
  /** The folder of every sandbox's layers (the applier reads the upper layers there). */
  readonly #base: string;
  #queue: Promise<unknown> = Promise.resolve();
  #stale: string | undefined;
  #pid: number | undefined;
  #looks: Promise<void> = Promise.resolve();
  #closed = false;
  /** The calls whose changes are held for review instead of applied (./hold_state.ts). */
  readonly holds: HoldSet = new HoldSet();

  constructor(o: SandboxLayersOptions) {
    this.#o = o;
    this.dirs = o.dirs;
    this.#artifacts = new Set(o.artifacts);
    this.#base = dirname(o.dirs.dir);
    const now = Date.now();
    for (const l of o.dirs.roots) {
      this.#memory.set(l.root, layerMemory());
      this.#epoch.set(l.root, o.resume?.epochs.get(l.root) ?? now);
      this.#inos.set(l.root, Deno.statSync(l.root).ino ?? 0);
      useApplier(l.root);
      let set = _live.get(l.root);
      if (!set) _live.set(l.root, set = new Set());
      set.add(this);
    }
    for (const [abs, sig] of o.resume?.view ?? []) this.#view.set(abs, sig);
  }

  /** Why the sandbox should start afresh before its next call (its view is stale), if so. */
  get stale(): string | undefined {
    return this.#stale;
  }

  /** Mark the sandbox's view stale. */
  markStale(why: string): void {
    this.#stale ??= why;
  }

  /**
   * The launcher process whose mount namespace holds the overlays (the
   * sandbox's first process): other sandboxes' applies are looked at there.
   */
  watch(pid: number | undefined): void {
    this.#pid = pid;
  }

  /**
   * Settle what processes a call left running write, a short while after
   * they write it, while no call runs (./layer_follow.ts); `onReport` gets
   * each settlement that changed anything.
   */
  follow(busy: () => boolean, onReport: (r: ChangeReport) => void): void {
    this.#unfollow?.();
    this.#unfollow = followLayers({
      uppers: this.dirs.roots.map((l) => join(l.dir, "u")),
      busy,
      settle: async () => {
        const r = await this.settle();
        if (!isEmptyReport(r)) onReport(r);
      },
    });
  }

  #unfollow: (() => void) | undefined;

  /** Resolves once the looks at other sandboxes' applies are done (then read {@link stale}). */
  looked(): Promise<void> {
    return this.#looks;
  }

  /** Settle every layer now: judge, apply, report. Calls are queued, one at a time. */
  settle(): Promise<ChangeReport> {
    const run = this.#queue.then(() => this.#settleAll());
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * The sandbox is gone: settle one last time, then stop (later settlements
   * report nothing, and the folders may be removed).
   */
  close(): Promise<ChangeReport> {
    const last = this.settle();
    const run = last.finally(() => this.retire());
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Stop settling and hearing other sandboxes' applies. */
  retire(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unfollow?.();
    for (const l of this.dirs.roots) {
      _live.get(l.root)?.delete(this);
      leaveApplier(l.root);
    }
  }

  async #settleAll(): Promise<ChangeReport> {
    const total = emptyReport();
    if (this.#closed) return total;
    const holds = this.holds.active();
    if (holds) return await this.#hold(holds);
    for (const l of this.dirs.roots) mergeReports(total, await this.#settle(l));
    return total;
  }

  /**
   * Hold what changed in every layer for review (./held_writer.ts) instead
   * of applying it: the tree is not touched; the sandbox's view now holds
   * what the tree does not, so its next call starts from the tree.
   */
  async #hold(holds: HoldRequest[]): Promise<ChangeReport> {
    this.holds.held(holds); // (one that fails is tried again: never applied instead)
    const report = await holdLayers(this.dirs.roots, this.#o.rules, holds, async (l) => {
      const started = Date.now(), memory = this.#memory.get(l.root)!;
      const diff = await diffLayer(l, memory, this.#artifacts);
      const [ino, epoch] = [this.#inos.get(l.root)!, this.#epoch.get(l.root)!];
      return {
        ops: diff.ops,
        view: { ino, epoch, view: this.#view },
        commit: () => void (memory.seen = diff.seen, this.#epoch.set(l.root, started)),
      };
    });
    if (report.held) this.markStale(`its changes are held for review (${report.held.id})`);
    return report;
  }

  async #settle(layer: LayerRoot): Promise<ChangeReport> {
    const started = Date.now();
    const memory = this.#memory.get(layer.root)!;
    const diff = await diffLayer(layer, memory, this.#artifacts);
    for (const op of this.#o.resume && diff.ops || []) {
      if (op.entry) op.entry.birthMs = this.#o.resume!.births.get(op.abs) ?? 0;
    }
    if (diff.ops.length === 0) {
      memory.seen = diff.seen;
      this.#epoch.set(layer.root, started);
      return emptyReport();
    }
    return await withTreeLock(layer.root, this.dirs.locks, async () => {
      const report = emptyReport();
      const applied: Applied[] = [];
      const judge = await LayerJudge.start(layer.root, join(layer.dir, "u"), {
        rules: this.#o.rules,
        view: { base: (abs) => this.#view.get(abs), epoch: this.#epoch.get(layer.root)! },
        env: userGitEnv(),
        shown: (abs) => this.#shown(abs),
      });
      await judge.prepare(diff.ops);
      const refs: LayerOp[] = [];
      const plan: LayerOp[] = [];
      for (const op of diff.ops) {
        const j = await this.#judge(op, judge, report);
        (j.ref ? refs : plan).push(...j.apply);
      }
      await this.#applyAll(layer, plan, report, applied);
      // Refs last: the objects they name are in the tree now.
      const verdicts = await judgeGitRefs(refs, judge.ctx);
      for (const [op, why] of verdicts.refuse) _refused(report, this.#shown(op.abs), why);
      await this.#applyAll(layer, verdicts.apply, report, applied);
      memory.seen = diff.seen;
      this.#epoch.set(layer.root, started);
      this.#tellOthers(layer.root, applied);
      // Its view now holds what the tree does not: the next call starts from the tree.
      if (report.refused.length) this.markStale(`${report.refused[0].path} was not applied`);
      return report;
    });
  }

  /**
   * Judge `op` (./layer_judge.ts): what to apply in its place (for the refs'
   * phase when `ref`); what was refused, kept, in conflict or masked goes
   * into `report`.
   */
  async #judge(
    op: LayerOp,
    judge: LayerJudge,
    report: ChangeReport,
  ): Promise<{ apply: LayerOp[]; ref?: boolean }> {
    if (op.vanished && this.#view.get(op.abs) === undefined) return { apply: [] }; // never applied
    const j = await judge.judge(op);
    const shown = this.#shown(op.abs);
    for (const k of j.kept) {
      _refused(report, this.#shown(k.abs), `kept when ${shown} was removed: ${k.why}`);
    }
    for (const c of j.conflicts) {
      report.conflicts.push({
        path: this.#shown(c),
        why: `kept: it changed outside this sandbox since its view, so ${shown}'s removal ` +
          `did not take it`,
      });
      this.markStale(`${this.#shown(c)} conflicted with a change made outside it`);
    }
    if (j.refuse !== undefined) {
      _refused(report, shown, j.refuse);
      return { apply: [] };
    }
    if (j.conflict) {
      await this.#conflict(op, report);
      return { apply: [] };
    }
    if (j.masked) (report.masked ??= []).push({ path: shown, why: j.masked });
    return { apply: j.apply, ref: j.ref };
  }

  /**
   * Apply `ops` that do not conflict, through the root's applier
   * (./root_applier.ts: the root as it was opened, never a name swapped
   * meanwhile); the report and `applied` say what happened.
   */
  async #applyAll(layer: LayerRoot, ops: LayerOp[], report: ChangeReport, applied: Applied[]) {
    const go: Array<{ op: LayerOp; now: Sig | null; req: ApplierOp }> = [];
    for (const op of ops) {
      const now = await lowerSig(op.abs);
      if (this.#conflicts(layer, op, now)) {
        await this.#conflict(op, report);
        continue;
      }
      if (op.kind === "remove" && now === null) continue;
      go.push({ op, now, req: await _request(op) });
    }
    if (go.length === 0) return;
    let results: ApplierResult[];
    try {
      results = await (this.#o.applier ?? applyInRoot)(
        layer.root,
        this.#inos.get(layer.root)!,
        this.#base,
        go.map((g) => g.req),
      );
    } catch (err) {
      for (const g of go) _refused(report, this.#shown(g.op.abs), (err as Error).message);
      return;
    }
    go.forEach(({ op, now }, i) => {
      const r = results[i] ?? { ok: false, error: "no answer" };
      if (!r.ok) return _refused(report, this.#shown(op.abs), `could not be applied: ${r.error}`);
      const sig = (r.sig ?? null) as Sig | null;
      this.#view.set(op.abs, sig);
      applied.push({ abs: op.abs, sig, named: (now === null) !== (sig === null) });
      _count(report, op, now, sig, this.#shown(op.abs));
    });
  }

  /** Keep the sandbox's version of a conflicting path and mark the sandbox stale. */
  async #conflict(op: LayerOp, report: ChangeReport): Promise<void> {
    const shown = this.#shown(op.abs);
    const kept = op.kind === "write" || op.kind === "symlink"
      ? await keepConflict(op.upper, this.#o.conflictsDir, relative("/", op.abs))
      : op.kind === "remove"
      ? "its removal was not applied"
      : "its folder was not applied";
    report.conflicts.push({ path: shown, why: kept });
    this.markStale(`${shown} conflicted with a change made outside it`);
  }

  /** Whether the tree's `now` at `op.abs` moved since this sandbox's view of it. */
  #conflicts(layer: LayerRoot, op: LayerOp, now: Sig | null): boolean {
    if (op.judged) return false; // checked path by path by the judge
    const base = this.#view.get(op.abs);
    if (base !== undefined) {
      return !sameSig(now, base) && !(op.kind === "dir" && now?.kind === "dir");
    }
    if (now === null) return false;
    if (op.kind === "dir" || op.kind === "prune") {
      return now.kind !== "dir" &&
        now.mtimeMs >= (op.entry?.birthMs || this.#epoch.get(layer.root)!);
    }
    const since = op.kind === "remove"
      ? this.#epoch.get(layer.root)!
      : op.entry?.birthMs || this.#epoch.get(layer.root)!;
    return now.mtimeMs >= since;
  }

  /** Tell the other live sandboxes over `root` what was applied. */
  #tellOthers(root: string, applied: Applied[]): void {
    if (applied.length === 0) return;
    for (const other of _live.get(root) ?? []) {
      if (other !== this) other.#heard(root, applied);
    }
  }

  /** Another sandbox applied changes to `root`: update this view, or mark it stale. */
  #heard(root: string, applied: Applied[]): void {
    const layer = this.dirs.roots.find((l) => l.root === root);
    if (!layer) return;
    for (const a of applied) {
      const rel = relative(root, a.abs);
      let held = false;
      try {
        Deno.lstatSync(join(layer.dir, "u", rel));
        held = true;
      } catch { /* not in this layer: its view is the tree's */ }
      if (held) this.markStale(`${this.#shown(a.abs)} changed in another sandbox`);
      else this.#view.set(a.abs, a.sig);
    }
    const named = applied.filter((a) => a.named);
    const pid = this.#pid;
    if (!named.length || this.#stale || pid === undefined) return;
    const changes = named.map((a) => ({ abs: a.abs, present: a.sig !== null }));
    this.#looks = this.#looks.then(async () => {
      const off = await staleInView(pid, layer, changes);
      if (off === undefined) this.markStale("another sandbox changed the tree");
      else if (off.length) this.markStale(`${off[0]} changed in another sandbox`);
    });
  }

  /** A path as reports show it: relative to the workspace when inside it. */
  #shown(abs: string): string {
    const ws = this.#o.rules.workspace;
    return isWithin(abs, ws) && abs !== ws ? relative(ws, abs) : abs;
  }
}

/** The applier's request for `op`. */
async function _request(op: LayerOp): Promise<ApplierOp> {
  switch (op.kind) {
    case "write":
      return { op: "write", rel: op.rel, from: op.upper, mode: op.mode ?? op.entry!.mode };
    case "symlink":
      return { op: "link", rel: op.rel, from: op.upper };
    case "dir":
      return { op: "dir", rel: op.rel, mode: op.mode ?? op.entry!.mode };
    case "prune": {
      const keep: string[] = [];
      for await (const e of Deno.readDir(op.upper)) keep.push(e.name);
      return { op: "prune", rel: op.rel, keep };
    }
    default:
      return { op: "remove", rel: op.rel };
  }
}

/** Count an applied operation in the report. */
function _count(r: ChangeReport, op: LayerOp, now: Sig | null, sig: Sig | null, shown: string) {
  let c: "+" | "~" | "-" | undefined;
  if (op.kind === "remove") c = now ? "-" : undefined;
  else if (op.kind === "prune") c = undefined;
  else if (op.kind === "dir") {
    // A folder that was one already: changed only when its mode did.
    const mode = op.treeMode !== undefined && op.mode !== op.treeMode;
    c = now?.kind === "dir" ? (mode ? "~" : undefined) : now ? "~" : "+";
  } else c = now ? "~" : "+";
  if (!c) return;
  if (c === "+") r.created++;
  else if (c === "~") r.changed++;
  else r.removed++;
  if (op.kind === "write" && sig) r.bytes += sig.size;
  if (r.paths.length < REPORT_PATHS) r.paths.push(c + shown);
}

function _refused(report: ChangeReport, path: string, why: string): void {
  if (report.refused.length < REPORT_PATHS) report.refused.push({ path, why });
}
