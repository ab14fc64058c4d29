/**
 * Settling a sandbox's write layers: after each call (and when the sandbox
 * ends), what the sandbox wrote in its upper layers is judged
 * (./change_rules.ts, ./_git_rules.ts) and applied to the user's tree, one
 * write root at a time under its lock (./_tree_lock.ts). A path that someone
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
import { fileClockNow } from "./_file_clock.ts";
import { isWithin } from "../base/mod.ts";
import { keepConflict, lowerSig, type Sig } from "./_tree_sig.ts";
import {
  type ChangeReport,
  emptyReport,
  isEmptyReport,
  mergeReports,
  type NotApplied,
  REPORT_PATHS,
} from "./change_report.ts";
import { followLayers } from "./_layer_follow.ts";
import { judgeGitRefs } from "./_git_settle.ts";
import { userGitEnv } from "./hooks_folders.ts";
import { LayerJudge } from "./_layer_judge.ts";
import { applyInRoot, leaveApplier, useApplier } from "./_root_applier.ts";
import type { ApplierResult } from "./_applier_protocol.ts";
import {
  changedBatches,
  countLayer,
  type LayerMemory,
  layerMemory,
  type LayerOp,
  layerRest,
  removalsOf,
} from "./_layer_diff.ts";
import {
  BATCH,
  countApplied,
  flushApplied,
  lookBatch,
  movedSince,
  notApplied,
  planBatch,
  refuse,
  requestOf,
  settleBatches,
  TreeLook,
} from "./_apply_batch.ts";
import { layerQuota } from "./layer_quota.ts";
import { bumpGeneration } from "./_layer_freshness.ts";
import { LayerView, type ViewHooks, viewHooks } from "./view_refresh.ts";
import type { LayerDirs, LayerRoot } from "./layer_dirs.ts";
import type { Applied, SandboxLayersOptions } from "./_settle_options.ts";
import { type HoldRequest, HoldSet } from "./hold_state.ts";
import { holdChanges } from "./held_writer.ts";
import { withTreeLock } from "./_tree_lock.ts";
import { ViewMap } from "./_path_memory.ts";

export type { Applied, LayerRules, SandboxLayersOptions } from "./_settle_options.ts";

/** The live layers of this process, by write root: each hears the others' applies. */
const _live = new Map<string, Set<SandboxLayers>>();

/** A sandbox's write layers on the host side. */
export class SandboxLayers {
  readonly dirs: LayerDirs;
  readonly #o: SandboxLayersOptions;
  readonly #artifacts: Set<string>;
  readonly #memory = new Map<string, LayerMemory>();
  /** The tree's signature each path of this sandbox's view rests on (null: absent). */
  readonly #view: ViewMap;
  readonly #epoch = new Map<string, number>();
  /** Each root's inode when the sandbox started: a root replaced since is not written. */
  readonly #inos = new Map<string, number>();
  /** The folder of every sandbox's layers (the applier reads the upper layers there). */
  readonly #base: string;
  #queue: Promise<unknown> = Promise.resolve();
  /** Its view of the tree, refreshed in place (./view_refresh.ts). */
  readonly view: LayerView;
  #onReport: ((r: ChangeReport) => void) | undefined;
  /** Something of this settlement reached the tree (the tree's generation moves). */
  #appliedNow = false;
  #closed = false;
  /** The layers went past their quota: nothing more of them is applied. */
  #over = false;
  /** The calls whose changes are held for review instead of applied (./hold_state.ts). */
  readonly holds: HoldSet = new HoldSet();

  constructor(o: SandboxLayersOptions) {
    this.#o = o;
    this.dirs = o.dirs;
    this.#artifacts = new Set(o.artifacts);
    this.#base = dirname(o.dirs.dir);
    this.view = new LayerView(o.dirs.roots, o.dirs.locks, this.#artifacts);
    // The kernel's file time, as the tree's files are stamped (./_file_clock.ts).
    const now = fileClockNow(o.dirs.dir);
    for (const l of o.dirs.roots) this.#memory.set(l.root, layerMemory());
    this.#view = new ViewMap(new Map([...this.#memory].map(([r, m]) => [r, m.seen])));
    this.#hooks = viewHooks({
      settle: () => this.#settleAll(),
      onReport: (r) => this.#onReport?.(r),
      view: this.#view,
      memory: this.#memory,
      shown: (abs) => this.#shown(abs),
    });
    for (const [abs, sig] of o.resume?.view ?? []) this.#view.set(abs, sig);
    for (const l of o.dirs.roots) {
      this.#epoch.set(l.root, o.resume?.epochs.get(l.root) ?? now);
      this.#inos.set(l.root, Deno.statSync(l.root).ino ?? 0);
      useApplier(l.root, this.#base);
      let set = _live.get(l.root);
      if (!set) _live.set(l.root, set = new Set());
      set.add(this);
    }
  }

  /** Why the sandbox's view must be the tree's again (a change of its was not applied), if so. */
  get stale(): string | undefined {
    return this.view.stale;
  }

  /** Mark the sandbox's view stale: its next refresh clears its layer. */
  markStale(why: string): void {
    this.view.markStale(why);
  }

  /**
   * The launcher process whose mount namespace holds the overlays (the
   * sandbox's first process): its view is refreshed there.
   */
  watch(pid: number | undefined): void {
    this.view.watch(pid);
  }

  /**
   * Before a call: refresh the sandbox's view of the tree in place when it
   * is due (./view_refresh.ts); `idle` when no other call of it runs.
   */
  refresh(idle: boolean): Promise<void> {
    if (this.#closed || !this.view.due()) return Promise.resolve();
    const run = this.#queue.then(async () => {
      const stale = this.view.stale !== undefined;
      await this.view.refresh(idle, this.#hooks);
      // A stale view made the tree's again holds nothing of its own: its quota starts afresh.
      if (stale && this.view.stale === undefined) this.#over = false;
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  #hooks: ViewHooks;

  /**
   * Settle what processes a call left running write, a short while after
   * they write it, while no call runs (./_layer_follow.ts); `onReport` gets
   * each settlement that changed anything.
   */
  follow(busy: () => boolean, onReport: (r: ChangeReport) => void): void {
    this.#unfollow?.();
    this.#onReport = onReport;
    this.#unfollow = followLayers({
      uppers: this.dirs.roots.map((l) => join(l.dir, "u")),
      busy,
      settle: async () => {
        // Asked while no call ran, it waits its turn; a call begun meanwhile settles its own.
        const r = await this.#settleWhen(() => !busy());
        if (!isEmptyReport(r)) onReport(r);
      },
    });
  }

  #unfollow: (() => void) | undefined;

  /** Settle every layer now: judge, apply, report. Calls are queued, one at a time. */
  settle(): Promise<ChangeReport> {
    return this.#settleWhen(() => true);
  }

  #settleWhen(still: () => boolean): Promise<ChangeReport> {
    const run = this.#queue.then(() => still() ? this.#settleAll() : emptyReport());
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
    if (this.#closed || this.#over) return total;
    const holds = this.holds.active();
    if (holds) return await this.#hold(holds);
    for (const l of this.dirs.roots) mergeReports(total, await this.#settle(l));
    return total;
  }

  /**
   * Settle one layer: read it once to count it against its quota and see
   * whether anything changed (keeping nothing of it), then again as a
   * stream, judging and applying its changes a batch at a time
   * (./_apply_batch.ts), each batch's apply under way while the next is
   * read and judged; removals after the writes, refs last; the last
   * request makes it all durable.
   */
  async #settle(layer: LayerRoot): Promise<ChangeReport> {
    const started = fileClockNow(this.dirs.dir);
    const memory = this.#memory.get(layer.root)!;
    const quota = this.#o.quota ?? layerQuota();
    const first = await countLayer(layer, memory, this.#artifacts, quota);
    if (!first.changed && !first.vanished) {
      this.#epoch.set(layer.root, started);
      return emptyReport();
    }
    return await withTreeLock(layer.root, this.dirs.locks, async () => {
      const report = emptyReport();
      this.#appliedNow = false;
      if (first.count.over) {
        this.#overQuota(report, first.count.text());
        if (!quota.partial) return report;
      }
      const shown = (abs: string) => this.#shown(abs);
      const judge = await LayerJudge.start(layer.root, join(layer.dir, "u"), {
        rules: this.#o.rules,
        view: { base: (abs) => this.#view.get(abs), epoch: this.#epoch.get(layer.root)! },
        env: userGitEnv(),
        shown,
      });
      const refs: LayerOp[] = [];
      const look = new TreeLook();
      const rest = layerRest();
      await settleBatches(
        layer,
        memory,
        changedBatches(layer, memory, this.#artifacts, quota, rest, BATCH),
        () => removalsOf(layer, memory, rest, first.vanished),
        {
          plan: async (ops) => {
            // The tree read once for the batch, before the judge's first look at it.
            lookBatch(ops, look);
            await judge.prepare(ops);
            return await planBatch(
              ops,
              (op) => this.#judge(op, judge, refs, report),
              report,
              shown,
            );
          },
          apply: (ops) => this.#applyAll(layer, ops, report),
        },
      );
      // Past the quota only now: the layer grew while it was applied.
      if (rest.count?.over && !report.over) this.#overQuota(report, rest.count.text(true));
      // Refs last: the objects they name are in the tree now.
      const verdicts = await judgeGitRefs(refs, judge.ctx);
      for (const [op, why] of verdicts.refuse) refuse(report, this.#shown(op.abs), why);
      await this.#applyAll(layer, verdicts.apply, report);
      const flush = this.#o.applier ? () => {} : flushApplied; // (a dry run: nothing to flush)
      await flush(report, layer.root, this.#inos.get(layer.root)!, this.#base);
      notApplied(report, layer, rest, shown);
      this.#epoch.set(layer.root, started);
      if (this.#appliedNow) {
        // Every corral's sandboxes over this root learn of it (./_layer_freshness.ts).
        const g = await bumpGeneration(this.dirs.locks, layer.root);
        this.view.applied(layer.root, g.before, g.after);
      }
      // Its view now holds what the tree does not: the next call starts from the tree.
      if (report.refused.length) this.markStale(`${report.refused[0].path} was not applied`);
      return report;
    });
  }

  /**
   * Hold what changed in every layer for review (./held_writer.ts) instead
   * of applying it: the tree is not touched; the sandbox's view now holds
   * what the tree does not, so its next call starts from the tree.
   */
  async #hold(holds: HoldRequest[]): Promise<ChangeReport> {
    this.holds.held(holds); // (one that fails is tried again: never applied instead)
    const quota = this.#o.quota ?? layerQuota(), [memory, inos] = [this.#memory, this.#inos];
    const r = await holdChanges(this.dirs.roots, holds, this.#o.rules, this.#artifacts, quota, {
      memory,
      inos,
      epochs: this.#epoch,
      view: this.#view,
    });
    if (r.over) this.#overQuota(r, r.over);
    if (r.held) this.markStale(`its changes are held for review (${r.held.id})`);
    return r;
  }

  /** The layers went past their quota: said in `report`; nothing more of them is applied. */
  #overQuota(report: ChangeReport, why: string): void {
    this.#over = true;
    report.over = why;
    this.markStale("its write layer went past its quota");
  }

  /**
   * Judge `op` (./_layer_judge.ts): what to apply in its place (refs and
   * what they hold wait in `refs` for the refs' phase); what was refused,
   * kept, in conflict or masked goes into `report`.
   */
  async #judge(
    op: LayerOp,
    judge: LayerJudge,
    refs: LayerOp[],
    report: ChangeReport,
  ): Promise<LayerOp[]> {
    if (op.vanished && this.#view.get(op.abs) === undefined) return []; // never applied
    const j = await judge.judge(op);
    const shown = this.#shown(op.abs);
    for (const k of j.kept) {
      refuse(report, this.#shown(k.abs), `kept when ${shown} was removed: ${k.why}`);
    }
    for (const c of j.conflicts) {
      _note(report.conflicts, {
        path: this.#shown(c),
        why: `kept: it changed outside this sandbox since its view, so ${shown}'s removal ` +
          `did not take it`,
      });
      this.markStale(`${this.#shown(c)} conflicted with a change made outside it`);
    }
    if (j.refuse !== undefined) {
      refuse(report, shown, j.refuse);
      return [];
    }
    if (j.conflict) {
      await this.#conflict(op, report);
      return [];
    }
    if (j.masked) _note(report.masked ??= [], { path: shown, why: j.masked });
    if (j.ref) {
      refs.push(...j.apply);
      return [];
    }
    return j.apply;
  }

  /**
   * Apply `ops` that do not conflict, through the root's applier
   * (./_root_applier.ts: the root as it was opened, never a name swapped
   * meanwhile, each file replaced, never written in place); the report and
   * the other sandboxes hear what happened.
   */
  async #applyAll(layer: LayerRoot, ops: LayerOp[], report: ChangeReport): Promise<void> {
    // The tree as the batch was read (./_apply_batch.ts's TreeLook), else now.
    for (const op of ops) if (op.now === undefined) op.now = await lowerSig(op.abs);
    const nows = ops.map((op) => op.now as Sig | null);
    // When an entry entered the layer decides a conflict: read only where one may be.
    const [births, epoch] = [this.#o.resume?.births, this.#epoch.get(layer.root)!];
    for (const op of births ? ops : []) {
      if (op.entry) op.entry.birthMs = births!.get(op.abs) || epoch;
    }
    await Promise.all(
      ops.filter((op) => op.now && op.entry && !op.entry.birthMs).map(async (op) => {
        op.entry!.birthMs = (await Deno.lstat(op.upper).catch(() => null))?.birthtime?.getTime() ??
          0;
      }),
    );
    const go: Array<{ op: LayerOp; now: Sig | null }> = [];
    for (const [i, op] of ops.entries()) {
      const now = nows[i];
      if (movedSince(op, now, this.#view.get(op.abs), epoch)) {
        await this.#conflict(op, report);
        continue;
      }
      if (op.kind === "remove" && now === null) continue;
      go.push({ op, now });
    }
    if (go.length === 0) return;
    let results: ApplierResult[];
    try {
      const reqs = go.map((g) => requestOf(g.op, g.now));
      const apply = this.#o.applier ?? applyInRoot;
      results = await apply(layer.root, this.#inos.get(layer.root)!, this.#base, reqs);
    } catch (err) {
      for (const g of go) refuse(report, this.#shown(g.op.abs), (err as Error).message);
      return;
    }
    // Told to the other sandboxes over the root, if any.
    const others = (_live.get(layer.root)?.size ?? 0) > 1;
    const applied: Applied[] = [];
    const memory = this.#memory.get(layer.root)!;
    for (const [i, { op, now }] of go.entries()) {
      const r = results[i] ?? { ok: false, error: "no answer" };
      if (r.conflict) await this.#conflict(op, report);
      if (!r.ok) {
        if (!r.conflict) refuse(report, this.#shown(op.abs), `could not be applied: ${r.error}`);
        continue;
      }
      const sig = (r.sig ?? null) as Sig | null;
      this.#appliedNow = true;
      memory.seen.setView(op.rel, sig);
      if (others) applied.push({ abs: op.abs, sig, named: (now === null) !== (sig === null) });
      countApplied(report, op, now, sig, () => this.#shown(op.abs));
    }
    this.#tellOthers(layer.root, applied);
  }

  /** Keep the sandbox's version of a conflicting path and mark the sandbox stale. */
  async #conflict(op: LayerOp, report: ChangeReport): Promise<void> {
    const shown = this.#shown(op.abs);
    const kept = op.kind === "write" || op.kind === "symlink"
      ? await keepConflict(op.upper, this.#o.conflictsDir, relative("/", op.abs))
      : op.kind === "remove"
      ? "its removal was not applied"
      : "its folder was not applied";
    _note(report.conflicts, { path: shown, why: kept });
    this.markStale(`${shown} conflicted with a change made outside it`);
  }

  /** Tell the other live sandboxes over `root` what was applied. */
  #tellOthers(root: string, applied: Applied[]): void {
    if (applied.length === 0) return;
    for (const other of _live.get(root) ?? []) {
      if (other !== this) other.#heard(root, applied);
    }
  }

  /**
   * Another sandbox of this process applied changes to `root`: what this
   * view rests on for the paths it does not hold (those it holds are cleared
   * at its next refresh, ./_view_clear.ts).
   */
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
      if (!held) this.#view.set(a.abs, a.sig);
    }
  }

  /** A path as reports show it: relative to the workspace when inside it. */
  #shown(abs: string): string {
    const ws = this.#o.rules.workspace;
    return isWithin(abs, ws) && abs !== ws ? relative(ws, abs) : abs;
  }
}

/** Note a path in one of the report's lists (it names the first {@link REPORT_PATHS}). */
function _note(list: NotApplied[], n: NotApplied): void {
  if (list.length < REPORT_PATHS) list.push(n);
}
