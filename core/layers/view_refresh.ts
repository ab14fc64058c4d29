/**
 * A long-lived sandbox's view of the tree, refreshed in place: the sandbox
 * (a hosted server, a process sandbox kept between calls) is never started
 * again because someone else wrote, and it sees what others wrote by its
 * next call.
 *
 * Before a call whose view is due (./_layer_freshness.ts: the tree's
 * generation moved, the view is old, or a change of its own was refused
 * or conflicted), corral
 *
 * 1. settles the layer (what the sandbox wrote reaches the tree first);
 * 2. when entries of the upper layer no longer belong in the view
 *    (./_view_clear.ts: its own copies of paths someone else changed since,
 *    or, after a refusal or a conflict, everything), pauses the sandbox
 *    (./view_procs.ts), settles again, takes those entries out, except
 *    what its processes hold;
 * 3. remounts each overlay in the launcher's mount namespace, which drops
 *    the overlay's cached entries: the next lookup asks the tree again;
 * 4. lets the sandbox go on.
 *
 * The process keeps its memory, its working folder, its open files. What
 * the kernel cannot refresh is named in {@link LayerView.note} (shown in
 * the call's result and in `corral servers`): a name a process holds open
 * keeps the version it opened, a working folder replaced in the tree stays
 * the old one, and an entry of its own layer that a process holds stays.
 *
 * @module
 */
import { dirname, join, relative } from "node:path";
import { isWithin } from "../base/mod.ts";
import { type ChangeReport, isEmptyReport } from "./change_report.ts";
import type { LayerMemory } from "./_layer_diff.ts";
import type { LayerRoot } from "./layer_dirs.ts";
import { readGeneration, VIEW_MAX_AGE_MS } from "./_layer_freshness.ts";
import { lowerSig, type Sig } from "./_tree_sig.ts";
import { clearEntries, type Holds, staleEntries } from "./_view_clear.ts";
import { type HeldEntry, lookAtSandbox, pauseSandbox, remountLayers } from "./view_procs.ts";

/** The file, in a sandbox's layer folder, that {@link LayerView.publish} keeps. */
export const VIEW_FILE = "view.json";

/** What {@link VIEW_FILE} holds. */
export interface PublishedView {
  /** The server's name. */
  label: string;
  /** The corral process that runs it. */
  corral: number;
  refreshes: number;
  /** When its view was last made (ISO time). */
  refreshed: string;
  /** What its view could not refresh, if anything. */
  stale?: string;
}

/**
 * The views published under `bases` (the layers' folders), by label.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { publishedViews } from "./view_refresh.ts";
 * const base = await Deno.makeTempDir();
 * await Deno.mkdir(`${base}/sandboxes/1-x`, { recursive: true });
 * await Deno.writeTextFile(`${base}/sandboxes/1-x/view.json`, '{"label":"s","corral":1,"refreshes":2,"refreshed":"t"}');
 * assert.equal(publishedViews([base]).get("s")?.[0].refreshes, 2);
 * ```
 */
export function publishedViews(bases: string[]): Map<string, PublishedView[]> {
  const out = new Map<string, PublishedView[]>();
  for (const base of bases) {
    let dirs: Deno.DirEntry[];
    try {
      dirs = [...Deno.readDirSync(join(base, "sandboxes"))];
    } catch {
      continue;
    }
    for (const d of dirs) {
      try {
        const v = JSON.parse(Deno.readTextFileSync(join(base, "sandboxes", d.name, VIEW_FILE)));
        if (typeof v?.label !== "string") continue;
        out.set(v.label, [...(out.get(v.label) ?? []), v as PublishedView]);
      } catch { /* none, or gone meanwhile */ }
    }
  }
  return out;
}

/** What a {@link LayerView} asks of the sandbox's layers (core/layers/settle_layers.ts). */
export interface ViewHooks {
  /** Settle every layer now (the caller already holds the settling queue). */
  settle(): Promise<ChangeReport>;
  /** The tree's signature the view of `abs` rests on (undefined: none recorded). */
  expected(abs: string): Sig | null | undefined;
  /** Entries taken out of `layer`'s upper layer: their paths now show the tree. */
  forget(layer: LayerRoot, rels: string[]): Promise<void>;
  /** A path as reports show it. */
  shown(abs: string): string;
}

/**
 * The {@link ViewHooks} of a sandbox's layers: its settlement (whose report
 * goes to `onReport`, as one settled between calls), the signatures its
 * view rests on, and the walks' memory, from which a cleared entry is
 * dropped (else the next walk would take it for a removal).
 */
export function viewHooks(o: {
  settle: () => Promise<ChangeReport>;
  onReport: (r: ChangeReport) => void;
  view: { get(abs: string): Sig | null | undefined; set(abs: string, sig: Sig | null): unknown };
  memory: Map<string, LayerMemory>;
  shown: (abs: string) => string;
}): ViewHooks {
  return {
    settle: async () => {
      const r = await o.settle();
      if (!isEmptyReport(r)) o.onReport(r);
      return r;
    },
    expected: (abs) => o.view.get(abs),
    forget: async (layer, rels) => {
      const memory = o.memory.get(layer.root)!;
      for (const rel of rels) {
        memory.seen.delete(rel);
        memory.opaque.delete(rel);
        o.view.set(join(layer.root, rel), await lowerSig(join(layer.root, rel)));
      }
    },
    shown: o.shown,
  };
}

/** One sandbox's view of its write roots: when it was made, and what it could not refresh. */
export class LayerView {
  readonly #roots: LayerRoot[];
  readonly #locks: string;
  readonly #artifacts: ReadonlySet<string>;
  readonly #gens = new Map<string, string>();
  #pid: number | undefined;
  #at = Date.now();
  #stale: string | undefined;
  #note: string | undefined;
  #label: string | undefined;
  /** How many times the view was refreshed. */
  refreshes = 0;

  constructor(roots: LayerRoot[], locks: string, artifacts: ReadonlySet<string>) {
    this.#roots = roots;
    this.#locks = locks;
    this.#artifacts = artifacts;
    for (const l of roots) this.#gens.set(l.root, readGeneration(locks, l.root));
  }

  /** The launcher whose mount namespace holds the overlays. */
  watch(pid: number | undefined): void {
    this.#pid = pid;
  }

  /**
   * Keep the view's state in {@link VIEW_FILE} beside the layers, for
   * `corral servers` (another process) to show, under `label` (a server's name).
   */
  publish(label: string): void {
    this.#label = label;
    this.#write();
  }

  #write(): void {
    if (this.#label === undefined || this.#roots.length === 0) return;
    const state: PublishedView = {
      label: this.#label,
      corral: Deno.pid,
      refreshes: this.refreshes,
      refreshed: new Date(this.#at).toISOString(),
      ...(this.#note ? { stale: this.#note } : {}),
    };
    try {
      Deno.writeTextFileSync(join(dirname(this.#roots[0].dir), VIEW_FILE), JSON.stringify(state));
    } catch { /* its folder is gone: the sandbox ended */ }
  }

  /** A change of the sandbox's was not applied: its view must be the tree's again. */
  markStale(why: string): void {
    this.#stale ??= why;
  }

  /** Why the whole layer must be cleared at the next refresh, if so. */
  get stale(): string | undefined {
    return this.#stale;
  }

  /** What the last refresh could not bring into the view, if anything. */
  get note(): string | undefined {
    return this.#note;
  }

  /** This sandbox's own apply moved `root` from `before` to `after`: its view holds it. */
  applied(root: string, before: string, after: string): void {
    if (this.#gens.get(root) === before) this.#gens.set(root, after);
  }

  /** Why the view is due for a refresh, or undefined. */
  due(): string | undefined {
    if (this.#pid === undefined) return undefined;
    if (this.#stale) return this.#stale;
    for (const l of this.#roots) {
      if (readGeneration(this.#locks, l.root) !== this.#gens.get(l.root)) {
        return "the workspace changed";
      }
    }
    return Date.now() - this.#at > VIEW_MAX_AGE_MS ? "the view is old" : undefined;
  }

  /**
   * Refresh the view if it is due. With `idle` false (calls of the sandbox
   * are running), only the cached entries are dropped; clearing the layer
   * waits for an idle call.
   */
  async refresh(idle: boolean, hooks: ViewHooks): Promise<void> {
    const pid = this.#pid;
    if (pid === undefined || !this.due()) return;
    try {
      await this.#refresh(pid, idle, hooks);
    } catch (err) {
      // Never the call's failure: the call runs in the view it has, and says so.
      this.#note = this.#failed((err as Error).message);
      this.#write();
    }
  }

  #failed(why: string): string {
    return `its view of the workspace could not be refreshed: ${why}; what others changed ` +
      `since ${new Date(this.#at).toISOString()} may not show in it`;
  }

  async #refresh(pid: number, idle: boolean, hooks: ViewHooks): Promise<void> {
    const gens = new Map(this.#roots.map((l) => [l.root, readGeneration(this.#locks, l.root)]));
    const at = Date.now();
    const kept: string[] = [];
    const problems: string[] = [];
    let held: HeldEntry[] | undefined;
    let failed: string | undefined;
    if (idle) {
      await hooks.settle();
      if ((await this.#plans(hooks)).some((p) => p.length)) {
        const paused = await pauseSandbox(pid);
        if (paused) {
          try {
            held = paused.held;
            await hooks.settle();
            await this.#clear(hooks, _holds(held), kept);
            failed = await remountLayers(pid, this.#mounts());
          } finally {
            await paused.resume();
          }
        } else {
          problems.push(
            "its processes could not be paused, so its layer was not cleared: paths it wrote " +
              "and others changed since show its own version",
          );
        }
      } else this.#stale = undefined;
    }
    if (held === undefined) failed = await remountLayers(pid, this.#mounts());
    if (failed) this.#note = this.#failed(failed);
    else {
      this.refreshes++;
      this.#at = at;
      for (const [root, g] of gens) this.#gens.set(root, g);
      const seen = held ?? await lookAtSandbox(pid) ?? [];
      this.#note = [...problems, ...await this.#notes(hooks, kept, seen)].join("; ") || undefined;
    }
    this.#write();
  }

  #mounts(): string[] {
    return this.#roots.map((l) => join(l.dir, "m"));
  }

  /** What each root's layer holds that no longer belongs in the view (all of it when stale). */
  #plans(hooks: ViewHooks): Promise<string[][]> {
    const all = this.#stale !== undefined;
    return Promise.all(
      this.#roots.map((l) =>
        staleEntries(l, { expected: hooks.expected, artifacts: this.#artifacts, all })
      ),
    );
  }

  /** Clear the plans (the sandbox is paused and settled); a stale view is the tree's again. */
  async #clear(hooks: ViewHooks, holds: Holds, kept: string[]): Promise<void> {
    const plans = await this.#plans(hooks);
    this.#stale = undefined;
    for (const [i, l] of this.#roots.entries()) {
      const r = await clearEntries(l, plans[i], holds);
      await hooks.forget(l, r.cleared);
      kept.push(...r.kept.map((rel) => hooks.shown(join(l.root, rel))));
    }
  }

  /** What the kernel left stale: held entries of the layer, names and folders held open. */
  async #notes(hooks: ViewHooks, kept: string[], held: HeldEntry[]): Promise<string[]> {
    const parts: string[] = [];
    if (kept.length) {
      parts.push(
        `${_list(kept)} ${kept.length > 1 ? "are" : "is"} held by a process of the sandbox, ` +
          `so its view keeps its own version until that process lets go`,
      );
    }
    const old: string[] = [];
    for (const h of held) {
      if (h.kind !== "fd" && h.kind !== "cwd") continue;
      const l = this.#roots.find((r) => isWithin(h.path, r.root) && h.path !== r.root);
      if (!l || old.includes(hooks.shown(h.path))) continue;
      // Its own entry is its own version (cleared or kept above).
      if (await _exists(join(l.dir, "u", relative(l.root, h.path)))) continue;
      const tree = await lowerSig(h.path);
      if (tree && tree.ino !== h.ino) old.push(hooks.shown(h.path));
    }
    if (old.length) {
      parts.push(
        `${_list(old)} ${old.length > 1 ? "are" : "is"} open (or a working folder) in the ` +
          `sandbox and was replaced in the workspace: by that name it shows the version it ` +
          `opened until it is closed`,
      );
    }
    return parts;
  }
}

function _holds(held: HeldEntry[]): Holds {
  return {
    inos: new Set(held.filter((h) => h.kind === "fd" || h.kind === "map").map((h) => h.ino)),
    paths: held.filter((h) => h.kind !== "map").map((h) => h.path),
  };
}

function _list(paths: string[]): string {
  const shown = paths.slice(0, 5).join(", ");
  return paths.length > 5 ? `${shown} and ${paths.length - 5} more` : shown;
}

async function _exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}
