/**
 * Applying held changes (./held_store.ts), or showing what applying them
 * would do, through the very settlement a sandbox's layers go through
 * (./settle_layers.ts): the held upper layers are settled as a sandbox's
 * would be, judged by ./_layer_judge.ts against the tree as it is now, with
 * the view of the tree they were made on, so that a path the user changed
 * since is a conflict (their version stays). The one difference of a dry
 * run is its applier: it writes nothing and tells what it was asked.
 *
 * A held set is checked against its manifest first, entry by entry (kind,
 * mode, size, SHA-256, link target, opacity): one changed, missing or
 * added entry refuses the whole set.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { type ChangeReport, REPORT_PATHS } from "./change_report.ts";
import { fileSha256 } from "./held_writer.ts";
import { HeldCorrupt, type HeldFound, type HeldManifest } from "./held_store.ts";
import { type LayerDirs, makeLayerDirs, removeLayerDirs } from "./layer_dirs.ts";
import type { applyInRoot } from "./_root_applier.ts";
import { type LayerRules, SandboxLayers } from "./settle_layers.ts";
import type { ApplierOp } from "./_applier_protocol.ts";
import type { Sig } from "./_tree_sig.ts";
import { opaqueFolders, walkUpper } from "./_upper_walk.ts";

/** What settling a held set did (or, in a dry run, would do). */
export interface HeldSettlement {
  report: ChangeReport;
  /** A dry run: every request its applier got (what would be written), by root. */
  requests: Array<{ root: string; op: ApplierOp }>;
}

/**
 * The rules a held set is judged by: those it was made under, and, where
 * `now` is given (the settings in force), those too: whichever is stricter
 * wins (every protected entry, trusted path and grant path of either).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { heldRules } from "./held_apply.ts";
 * const rules = { workspace: "/w", entries: [".envrc"], trust: [], pathDirs: [], grantPaths: ["/w"] };
 * const m = { rules } as never;
 * const r = heldRules(m, { ...rules, entries: [".vscode/"], grantPaths: ["/w", "/w/out"] });
 * assert.deepEqual(r.entries, [".envrc", ".vscode/"]);
 * assert.deepEqual(r.grantPaths, ["/w", "/w/out"]);
 * ```
 */
export function heldRules(m: HeldManifest, now?: LayerRules): LayerRules {
  const then = m.rules;
  const union = <T>(a: readonly T[], b: readonly T[] = []) => [...new Set([...a, ...b])];
  const trust = new Map(then.trust.map((t) => [t.path, t]));
  for (const t of now?.trust ?? []) if (!trust.has(t.path)) trust.set(t.path, t);
  return {
    workspace: then.workspace,
    entries: union(then.entries, now?.entries),
    trust: [...trust.values()],
    pathDirs: union(then.pathDirs, now?.pathDirs),
    grantPaths: union(then.grantPaths, now?.grantPaths),
  };
}

/**
 * Check every entry of the held set against its manifest; throws
 * {@link HeldCorrupt} naming the first difference.
 */
export async function checkHeld(found: HeldFound & { manifest: HeldManifest }): Promise<void> {
  const bad = (why: string) =>
    new HeldCorrupt(
      `held changes ${found.id} are corrupted: ${why}; drop them: corral changes drop ${found.id}`,
    );
  for (const [i, r] of found.manifest.roots.entries()) {
    const upper = join(found.dir, String(i), "u");
    let on: Awaited<ReturnType<typeof walkUpper>>;
    try {
      if (!Deno.statSync(upper).isDirectory) throw new Error("not a folder");
      on = await walkUpper(upper);
    } catch {
      throw bad(`the layer of ${r.root} is missing`);
    }
    const byRel = new Map(r.entries.map((e) => [e.rel, e]));
    const missing = new Set(byRel.keys());
    for (const e of on) {
      const m = byRel.get(e.rel);
      if (!m) throw bad(`${e.rel} is not in its manifest`);
      if (m.kind !== e.kind) throw bad(`${e.rel} is a ${e.kind}, its manifest says ${m.kind}`);
      if (m.mode !== e.mode) throw bad(`${e.rel} has another mode than its manifest says`);
      const at = join(upper, e.rel);
      if (m.kind === "file" && (m.size !== e.size || m.sha256 !== await fileSha256(at))) {
        throw bad(`${e.rel} is not the content that was held (its SHA-256 differs)`);
      }
      if (m.kind === "symlink" && m.target !== await Deno.readLink(at)) {
        throw bad(`the link ${e.rel} leads elsewhere than when it was held`);
      }
      missing.delete(e.rel);
    }
    const gone = missing.values().next();
    if (!gone.done) throw bad(`${gone.value} is missing`);
    const dirs = r.entries.filter((e) => e.kind === "dir").map((e) => e.rel);
    const opaque = await opaqueFolders(upper, dirs);
    for (const d of dirs) {
      if (opaque.has(d) !== !!byRel.get(d)!.opaque) {
        throw bad(`the folder ${d} is ${opaque.has(d) ? "" : "not "}opaque, unlike when held`);
      }
    }
  }
}

/**
 * Settle the held set `found` (checked first: {@link checkHeld}) against
 * the tree as it is now, judged by `rules`: applied, or with `dry`, only
 * judged (nothing written; the report says what would be). Throws when a
 * write root is gone or is no longer the folder the changes were made in.
 */
export async function settleHeld(
  found: HeldFound & { manifest: HeldManifest },
  rules: LayerRules,
  dry: boolean,
): Promise<HeldSettlement> {
  await checkHeld(found);
  const m = found.manifest;
  for (const r of m.roots) {
    let ino: number | null | undefined;
    try {
      ino = Deno.statSync(r.root).ino;
    } catch {
      throw new Error(`cannot apply held changes ${m.id}: ${r.root} is gone`);
    }
    if (ino !== r.ino) {
      throw new Error(
        `cannot apply held changes ${m.id}: ${r.root} is not the folder they were made in ` +
          `(it was replaced since)`,
      );
    }
  }
  // Settled from a sandbox's layer folders, as any layer is (the applier reads them there).
  const made = makeLayerDirs(m.roots.map((r) => r.root));
  const scratch = dry ? await Deno.makeTempDir({ prefix: "corral-held-" }) : undefined;
  const dirs: LayerDirs = {
    ...made,
    conflicts: scratch ?? join(dirname(dirname(made.dir)), "conflicts", `held-${m.id}`),
  };
  try {
    for (const [i, l] of dirs.roots.entries()) {
      await _copyLayer(join(found.dir, String(i), "u"), join(l.dir, "u"));
    }
  } catch (err) {
    await removeLayerDirs(made);
    throw err;
  }
  const requests: HeldSettlement["requests"] = [];
  const layers = new SandboxLayers({
    dirs,
    artifacts: [],
    rules,
    conflictsDir: dirs.conflicts,
    resume: {
      epochs: new Map(m.roots.map((r) => [r.root, r.epoch])),
      view: new Map(m.roots.flatMap((r) => r.view as Array<[string, Sig | null]>)),
      births: new Map(
        m.roots.flatMap((r) =>
          Object.entries(r.births).map(([rel, ms]) => [join(r.root, rel), ms])
        ),
      ),
    },
    ...(dry ? { applier: _dryApplier(requests) } : {}),
  });
  try {
    const report = await layers.settle();
    for (const r of m.roots) {
      for (const n of r.notHeld) if (report.refused.length < REPORT_PATHS) report.refused.push(n);
    }
    return { report, requests };
  } finally {
    layers.retire();
    await removeLayerDirs(made);
    if (scratch) await Deno.remove(scratch, { recursive: true }).catch(() => {});
  }
}

/** Copy a held upper layer whole, with the overlay's marks (./held_writer.ts keeps them). */
async function _copyLayer(from: string, to: string): Promise<void> {
  const sh = 'tar --xattrs "--xattrs-include=*.overlay.*" -C "$1" -cf - . | ' +
    'tar --xattrs "--xattrs-include=*.overlay.*" --no-same-owner -C "$2" -xpf -';
  const out = await new Deno.Command("/bin/bash", {
    args: ["-o", "pipefail", "-c", sh, "corral-held", from, to],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin", LC_ALL: "C" },
  }).output();
  if (!out.success) {
    const why = new TextDecoder().decode(out.stderr).trim().split("\n")[0];
    throw new Error(`the held changes could not be read: tar: ${why}`);
  }
}

/** An applier that writes nothing: each request is noted and answered as done. */
function _dryApplier(requests: HeldSettlement["requests"]): typeof applyInRoot {
  return (root, _ino, _layers, ops) => {
    const now = Date.now();
    return Promise.resolve(ops.map((op) => {
      requests.push({ root, op });
      const kind = op.op === "write"
        ? "file"
        : op.op === "link"
        ? "symlink"
        : op.op === "remove"
        ? null
        : "dir";
      let size = 0;
      try {
        if (op.from) size = Deno.lstatSync(op.from).size;
      } catch { /* gone: none */ }
      return { ok: true, sig: kind && { kind, ino: 0, size, mtimeMs: now } };
    }));
  };
}
