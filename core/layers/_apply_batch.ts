/**
 * The pieces of a settlement that go a batch at a time
 * (./settle_layers.ts): the applier's request for each operation, what an
 * applied operation counts in the report, refusals, and the batches
 * themselves. A settlement works through a layer {@link BATCH} entries at
 * a time, awaiting between batches, so that another session's calls are
 * served meanwhile and the host's memory follows one batch, not the layer.
 *
 * @module
 */
import { join } from "node:path";
import { type ChangeReport, REPORT_PATHS } from "./change_report.ts";
import {
  commitRemovals,
  commitSeen,
  type LayerMemory,
  type LayerOp,
  type LayerRest,
  opsOf,
} from "./_layer_diff.ts";
import type { UpperEntry } from "./_upper_walk.ts";
import { isTempName } from "../guard/mod.ts";
import { applyInRoot } from "./_root_applier.ts";
import type { LayerRoot } from "./layer_dirs.ts";
import { sameSig, type Sig, sigOf } from "./_tree_sig.ts";
import type { ApplierOp } from "./_applier_protocol.ts";
import { maskedMode, userUmask } from "./_mode_rules.ts";

/** Entries judged and applied per batch. */
export const BATCH = 1024;

/**
 * `items` in slices of `size`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { slices } from "./_apply_batch.ts";
 * assert.deepEqual([...slices([1, 2, 3, 4, 5], 2)], [[1, 2], [3, 4], [5]]);
 * ```
 */
export function* slices<T>(items: readonly T[], size = BATCH): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

/**
 * What the tree holds at the paths of a settlement, read by folder: each
 * folder's names once (a path it does not name is absent, with no error
 * to make), then one `lstat` per path it names. A name made after its
 * folder was read reads as absent: the applier, which looks again right
 * before it writes, sees it and replaces nothing (a conflict).
 */
export class TreeLook {
  readonly #names = new Map<string, Set<string> | null>();

  /**
   * What `lstat` reads at each of `paths` (absolute), in order; null where
   * nothing is.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { TreeLook } from "./_apply_batch.ts";
   * const d = await Deno.makeTempDir();
   * await Deno.writeTextFile(`${d}/a`, "hi");
   * const [a, b, c] = new TreeLook().infos([`${d}/a`, `${d}/b`, `${d}/none/c`]);
   * assert.deepEqual([a?.isFile, a?.size, b, c], [true, 2, null, null]);
   * ```
   */
  infos(paths: string[]): Array<Deno.FileInfo | null> {
    return paths.map((p) => {
      const slash = p.lastIndexOf("/");
      const dir = p.slice(0, Math.max(1, slash));
      let names = this.#names.get(dir);
      if (names === undefined) {
        try {
          names = new Set([...Deno.readDirSync(dir)].map((e) => e.name));
        } catch {
          names = null;
        }
        this.#names.set(dir, names);
      }
      return names?.has(p.slice(slash + 1)) ? _lstat(p) : null;
    });
  }
}

function _lstat(abs: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(abs);
  } catch {
    return null;
  }
}

/** What a settlement does with each batch. */
export interface BatchSteps {
  /** Judge a batch: what is to be applied (refusals noted). */
  plan: (ops: LayerOp[]) => Promise<LayerOp[]>;
  /** Apply a judged batch. */
  apply: (ops: LayerOp[]) => Promise<void>;
}

/**
 * Judge and apply the changed entries of `batches` (a layer's second
 * read, ./_layer_diff.ts), a batch at a time: each batch's apply is under
 * way while the next one is read and judged; then the removals (deepest
 * first) once every write is applied. Each batch settled is committed to
 * `memory`.
 */
export async function settleBatches(
  layer: LayerRoot,
  memory: LayerMemory,
  batches: AsyncIterable<UpperEntry[]>,
  removals: () => Promise<LayerOp[]>,
  steps: BatchSteps,
): Promise<void> {
  let pending: Promise<void> = Promise.resolve();
  const go = async (ops: LayerOp[]) => {
    const plan = await steps.plan(ops);
    const applying = steps.apply(plan);
    try {
      await pending;
    } finally {
      pending = applying;
    }
  };
  try {
    for await (const batch of batches) {
      await go(await opsOf(layer, batch, memory));
      commitSeen(memory, batch);
    }
    await pending;
    for (const batch of slices(await removals())) {
      await go(batch);
      commitRemovals(memory, batch);
    }
  } finally {
    await pending;
  }
}

/**
 * The operations of a batch to apply (its tree read first by
 * {@link lookBatch}), each judged (`judge`: what to apply in its place, its
 * refusals and conflicts noted by it), a few at a time; a name corral keeps
 * for its own temporary files is refused here, noted in `report`.
 */
export async function planBatch(
  ops: LayerOp[],
  judge: (op: LayerOp) => Promise<LayerOp[]>,
  report: ChangeReport,
  shown: (abs: string) => string,
): Promise<LayerOp[]> {
  const plans = await inTurn(ops, _JUDGED_AT_ONCE, (op) => {
    if (!isTempName(op.rel)) return judge(op);
    refuse(report, shown(op.abs), "a name corral keeps for its own temporary files");
    return Promise.resolve([]);
  });
  return plans.flat();
}

/**
 * Read what the tree holds at each path of `ops` not read yet (`op.now`),
 * by folder (`look`): the judge then reads no path twice, and a path the
 * tree does not hold costs it nothing.
 */
export function lookBatch(ops: LayerOp[], look: TreeLook): void {
  const unread = ops.filter((op) => op.now === undefined);
  look.infos(unread.map((op) => op.abs)).forEach((st, i) => {
    unread[i].now = st && sigOf(st);
    unread[i].nowInfo = st;
  });
}

/** Operations judged at once (each may read the tree, or start git or find). */
const _JUDGED_AT_ONCE = 8;

/** Make what a settlement applied durable: the applier's last request, a flush. */
export async function flushApplied(
  report: ChangeReport,
  root: string,
  ino: number,
  layers: string,
): Promise<void> {
  if (report.created + report.changed + report.removed === 0) return;
  try {
    await applyInRoot(root, ino, layers, [], true);
  } catch { /* applied already; only its flush failed */ }
}

/** Name in `report` what a layer holds that is not applied for its quota. */
export function notApplied(
  report: ChangeReport,
  layer: LayerRoot,
  rest: LayerRest,
  shown: (abs: string) => string,
): void {
  for (const rel of rest.past) {
    refuse(report, shown(join(layer.root, rel)), "past the layer's quota");
  }
}

/**
 * The applier's request for `op`, given what the tree holds there now
 * (`now`): the applier replaces nothing else than that. Its mode is the
 * judge's (`op.mode`, masked); an operation the judge gave none (a ref's)
 * gets the layer's, masked as for a new path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { requestOf } from "./_apply_batch.ts";
 * const entry = { rel: "f", kind: "file", ino: 1, size: 1, mtimeMs: 0, birthMs: 0, mode: 0o4777 } as const;
 * const op = { rel: "f", abs: "/r/f", upper: "/u/f", kind: "write", entry } as const;
 * assert.equal(requestOf({ ...op, mode: 0o2775 }, null).mode, 0o2775); // the judge's, exactly
 * assert.equal(requestOf(op, null).mode! & 0o7000, 0); // never setuid, setgid or sticky
 * assert.equal(requestOf(op, null).mode! & 0o022 & Deno.umask(), 0); // nor what the umask denies
 * ```
 */
export function requestOf(op: LayerOp, now: Sig | null): ApplierOp {
  const expect = now;
  const mode = () =>
    op.mode ?? maskedMode(op.entry!.mode & 0o7777, op.kind === "dir", null, userUmask());
  switch (op.kind) {
    case "write":
      return {
        op: "write",
        rel: op.rel,
        from: op.upper,
        mode: mode(),
        size: op.entry!.size,
        expect,
      };
    case "symlink":
      return { op: "link", rel: op.rel, from: op.upper, expect };
    case "dir":
      return { op: "dir", rel: op.rel, mode: mode(), expect };
    case "remove":
      return { op: "remove", rel: op.rel, expect };
    default:
      // The judge never lets one through (a folder made again comes as removals).
      throw new TypeError(`Cannot apply ${op.rel}: a ${op.kind} is no operation on the tree`);
  }
}

/** Count an applied operation in the report (`shown`: its path as reports show it). */
export function countApplied(
  r: ChangeReport,
  op: LayerOp,
  now: Sig | null,
  sig: Sig | null,
  shown: () => string,
): void {
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
  if (r.paths.length < REPORT_PATHS) r.paths.push(c + shown());
}

/**
 * Whether the tree's `now` at `op.abs` moved since a sandbox's view of it:
 * `base`, the signature the view rests on (undefined: none kept), else
 * since the entry entered the layer, else since `epoch`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { movedSince } from "./_apply_batch.ts";
 * const op = { rel: "f", abs: "/r/f", upper: "/u/f", kind: "write" } as const;
 * const now = { kind: "file", ino: 1, size: 1, mtimeMs: 2000 } as const;
 * assert.equal(movedSince(op, now, now, 0), false); // as the view saw it
 * assert.equal(movedSince(op, now, null, 0), true); // made since
 * assert.equal(movedSince(op, now, undefined, 1000), true); // saved after the view began
 * assert.equal(movedSince(op, now, undefined, 3000), false);
 * ```
 */
export function movedSince(
  op: LayerOp,
  now: Sig | null,
  base: Sig | null | undefined,
  epoch: number,
): boolean {
  if (op.judged) return false; // checked path by path by the judge
  if (base !== undefined) {
    return !sameSig(now, base) && !(op.kind === "dir" && now?.kind === "dir");
  }
  if (now === null) return false;
  if (op.kind === "dir" || op.kind === "prune") {
    return now.kind !== "dir" && now.mtimeMs >= (op.entry?.birthMs || epoch);
  }
  return now.mtimeMs >= (op.kind === "remove" ? epoch : op.entry?.birthMs || epoch);
}

/** Note a refused change (the report names the first ones). */
export function refuse(report: ChangeReport, path: string, why: string): void {
  if (report.refused.length < REPORT_PATHS) report.refused.push({ path, why });
}

/** Settle `fn` over `items` with at most `n` under way at once, results in order. */
export async function inTurn<T, R>(
  items: readonly T[],
  n: number,
  fn: (x: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  }));
  return out;
}
