/**
 * Where a sandbox's write layers live on the host: one private folder per
 * sandbox (`sandboxes/<pid>-<random>`, beside `locks/` and `conflicts/`), with,
 * per layered write root, the overlay's
 * upper layer `u`, its work folder `w` and two mount points `l` (the root as
 * opened) and `m` (the overlay) that only the sandbox's mount namespace
 * sees. Never inside the user's tree: corral's cache folder
 * (`<cache>/corral/layers`, `CORRAL_LAYERS_DIR` to choose), or, when a write
 * root holds that (a workspace of HOME, allowed only by an explicit
 * opt-out), `/var/tmp/corral-<uid>/layers` or `/tmp/corral-<uid>/layers`. Part of the
 * trust base and hidden from every sandbox (core/config/trust_base.ts): it
 * holds other sandboxes' unapplied writes.
 *
 * Folders of sandboxes whose corral process is gone are removed by the next
 * corral that makes one (./layer_sweep.sh).
 *
 * @module
 */
import { basename, join } from "node:path";
import { layerBases, ownStateDir } from "../config/mod.ts";
import { isWithin, shellProgram } from "../base/mod.ts";

export { layerBases };

/** One layered write root. */
export interface LayerRoot {
  /** The write root (a folder of the user's tree): the overlay's lower layer. */
  root: string;
  /** Its layer folder (`u`, `w`, `l`, `m` inside). */
  dir: string;
}

/** A sandbox's layer folders, made by {@link makeLayerDirs}. */
export interface LayerDirs {
  /** The sandbox's own folder. */
  dir: string;
  roots: LayerRoot[];
  /** Where the lock files of applies are (shared by every corral of this user). */
  locks: string;
  /** Where this sandbox's conflicting versions are kept (made when needed). */
  conflicts: string;
}

/**
 * Make the layer folders of one sandbox for `roots` (real paths of folders):
 * in the first base that lies outside every root and that no root lies in.
 * Throws an Error naming the roots when there is none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { makeLayerDirs, removeLayerDirs } from "./layer_dirs.ts";
 * const ws = await Deno.realPath(await Deno.makeTempDir());
 * const l = makeLayerDirs([ws]);
 * assert.ok(Deno.statSync(`${l.roots[0].dir}/u`).isDirectory);
 * await removeLayerDirs(l);
 * assert.throws(() => Deno.statSync(l.dir));
 * ```
 */
export function makeLayerDirs(roots: string[]): LayerDirs {
  const base = layerBases().find((b) =>
    !/[,:\\]/.test(b) && roots.every((r) => !isWithin(b, r) && !isWithin(r, b)) && ownStateDir(b)
  );
  if (!base) {
    throw new Error(
      `no folder for the sandbox's write layers lies outside its write grant ` +
        `(${roots.join(", ")}): set CORRAL_LAYERS_DIR to a folder outside it`,
    );
  }
  const sandboxes = join(base, "sandboxes");
  Deno.mkdirSync(sandboxes, { recursive: true, mode: 0o700 });
  _sweepOnce(sandboxes);
  const dir = Deno.makeTempDirSync({ dir: sandboxes, prefix: `${Deno.pid}-` });
  const out: LayerDirs = {
    dir,
    roots: [],
    locks: join(base, "locks"),
    conflicts: join(base, "conflicts", basename(dir)),
  };
  roots.forEach((root, i) => {
    const d = join(dir, String(i));
    for (const sub of ["u", "w", "l", "m"]) Deno.mkdirSync(join(d, sub), { recursive: true });
    out.roots.push({ root, dir: d });
  });
  return out;
}

/** Remove a sandbox's layer folders (call once its namespace is gone). */
export async function removeLayerDirs(dirs: LayerDirs): Promise<void> {
  await _removeTree([dirs.dir]);
}

/** `chmod` then `rm -rf`: the overlay's work folder is left mode 000. */
async function _removeTree(paths: string[]): Promise<void> {
  if (paths.length === 0) return;
  try {
    await new Deno.Command("/bin/sh", {
      args: ["-c", 'chmod -R u+rwx -- "$@" 2>/dev/null; rm -rf -- "$@"', "corral-layers", ...paths],
      stdin: "null",
      stdout: "null",
      stderr: "null",
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin" },
    }).output();
  } catch { /* the next sweep tries again */ }
}

const _swept = new Set<string>();

/** Remove, once per process and base, the folders of corral processes that are gone. */
function _sweepOnce(base: string): void {
  if (_swept.has(base)) return;
  _swept.add(base);
  try {
    new Deno.Command("/bin/sh", {
      args: [shellProgram("core/layers/layer_sweep.sh"), base, String(Deno.pid)],
      stdin: "null",
      stdout: "null",
      stderr: "null",
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin" },
    }).spawn().status.catch(() => {});
  } catch { /* the next corral sweeps */ }
}
