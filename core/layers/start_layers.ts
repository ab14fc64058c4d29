/**
 * Making a sandbox's write layers at its start: which write roots get one
 * (every folder of the write grant not inside another), their folders
 * (./layer_dirs.ts), and the rules their changes are judged by
 * (./change_rules.ts): the workspace, the protected entries, the trust
 * base, the folders on the user's PATH, and every grant path. Shared by
 * process sandboxes (core/sandbox/process_transport.ts) and hosted servers
 * (core/hosted/launch.ts).
 *
 * @module
 */
import { isAbsolute, resolve } from "node:path";
import { isWithin } from "../base/mod.ts";
import { PLANTED_DEFAULT_ENTRIES } from "../guard/mod.ts";
import { envVar } from "../config/mod.ts";
import { type LayerDirs, makeLayerDirs, removeLayerDirs } from "./layer_dirs.ts";
import { type LayerRules, SandboxLayers } from "./settle_layers.ts";
import type { LayerQuota } from "./layer_quota.ts";

/** What the layers of one sandbox are judged by, besides its write grant. */
export interface LayerTrust {
  /** The trust base, with what each path is. */
  trust: readonly { path: string; what: string }[];
  /** Every grant path of every sandbox (and the workspace). */
  grantPaths?: readonly string[];
}

/**
 * The write roots that get a layer: folders of `write` (real paths) that
 * are not inside another one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { layerRoots } from "./start_layers.ts";
 * const ws = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.mkdir(`${ws}/a`);
 * await Deno.writeTextFile(`${ws}/f`, "");
 * assert.deepEqual(layerRoots([`${ws}/a`, ws, `${ws}/f`, `${ws}/none`]), [ws]);
 * ```
 */
export function layerRoots(write: readonly string[]): string[] {
  const dirs = [...new Set(write)].filter((p) => {
    try {
      return isAbsolute(p) && Deno.lstatSync(p).isDirectory;
    } catch {
      return false;
    }
  });
  return dirs.filter((p) => !dirs.some((o) => o !== p && isWithin(p, o)));
}

/** The folders on the user's PATH, absolute (and their real paths where they exist). */
export function pathFolders(): string[] {
  const out = new Set<string>();
  for (const d of (envVar("PATH") ?? "").split(":")) {
    if (!isAbsolute(d)) continue;
    out.add(resolve(d));
    try {
      out.add(Deno.realPathSync(d));
    } catch { /* missing: named as given */ }
  }
  return [...out];
}

/** A sandbox's layers: its folders (for the namespace) and the settling side. */
export interface StartedLayers {
  dirs: LayerDirs;
  /** Each layered root and its folder, for core/jail/namespace.ts. */
  map: Map<string, string>;
  /** Made once the namespace's artifacts are known. */
  open(artifacts: string[]): SandboxLayers;
  /** Remove the folders (the sandbox never started, or is gone and settled). */
  remove(): Promise<void>;
}

/**
 * Make the layer folders of a sandbox that writes `write` in `workspace`
 * (undefined when no write root is a folder), bounded by `quota`
 * (./layer_quota.ts; absent: corral's defaults). Throws an Error naming
 * the roots when no folder outside them can hold the layers.
 */
export function startLayers(
  write: readonly string[],
  workspace: string,
  entries: readonly string[] | undefined,
  trust: LayerTrust,
  quota?: LayerQuota,
): StartedLayers | undefined {
  const roots = layerRoots(write);
  if (roots.length === 0) return undefined;
  const dirs = makeLayerDirs(roots);
  const rules: LayerRules = {
    workspace,
    entries: entries ?? PLANTED_DEFAULT_ENTRIES,
    trust: [...trust.trust, { path: resolve(dirs.dir, "..", ".."), what: "corral's write layers" }],
    pathDirs: pathFolders(),
    grantPaths: [...new Set([workspace, ...write, ...(trust.grantPaths ?? [])])],
  };
  return {
    dirs,
    map: new Map(dirs.roots.map((r) => [r.root, r.dir])),
    open: (artifacts) =>
      new SandboxLayers({ dirs, artifacts, rules, conflictsDir: dirs.conflicts, quota }),
    remove: () => removeLayerDirs(dirs),
  };
}
