/**
 * Whether a sandbox's overlay still shows the tree after another sandbox
 * applied changes to it. The kernel leaves an overlay undefined when its
 * lower folder changes while mounted; in practice a path the sandbox looked
 * up before it existed stays missing in its view (a cached negative entry),
 * and a removed one may stay visible. So after an apply that made or
 * removed paths, corral looks at them from inside each other sandbox's
 * layer namespace (`nsenter` into its launcher's mount namespace, where
 * the overlay is mounted at `LAYER/m`): any path that shows otherwise than
 * in the tree marks that sandbox stale, and it starts afresh (after
 * settling) before its next call.
 *
 * @module
 */
import { join, relative } from "node:path";
import { userId } from "../config/install_dir.ts";
import type { LayerRoot } from "./layer_dirs.ts";

/** More changed paths than this: the sandbox is taken as stale without looking. */
export const MAX_LOOKS = 256;

// Prints each path whose presence in the overlay is not the expected one (1 present, 0 absent).
const _LOOK = `m=$1; shift
while [ $# -gt 1 ]; do
  if [ -e "$m/$1" ] || [ -L "$m/$1" ]; then h=1; else h=0; fi
  [ "$h" = "$2" ] || printf '%s\\n' "$1"
  shift 2
done`;

/**
 * The paths of `changes` (absolute, in `layer.root`, each present or not in
 * the tree now) that the overlay of the sandbox whose launcher is `pid`
 * shows otherwise. Undefined when it cannot be looked at (then take it as stale).
 */
export async function staleInView(
  pid: number,
  layer: LayerRoot,
  changes: Array<{ abs: string; present: boolean }>,
): Promise<string[] | undefined> {
  if (changes.length > MAX_LOOKS) return undefined;
  const nsenter = _nsenter();
  if (!nsenter) return undefined;
  const ns = userId() === 0
    ? ["-t", String(pid), "-m"]
    : ["-t", String(pid), "-U", "-m", "--preserve-credentials"];
  const args = changes.flatMap((c) => [relative(layer.root, c.abs), c.present ? "1" : "0"]);
  try {
    const out = await new Deno.Command(nsenter, {
      args: [...ns, "--", "/bin/sh", "-c", _LOOK, "corral-look", join(layer.dir, "m"), ...args],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin" },
    }).output();
    if (!out.success) return undefined;
    return new TextDecoder().decode(out.stdout).split("\n").filter(Boolean);
  } catch {
    return undefined;
  }
}

let _path: string | undefined | null = null;

function _nsenter(): string | undefined {
  if (_path !== null) return _path;
  for (const p of ["/usr/bin/nsenter", "/bin/nsenter", "/usr/sbin/nsenter"]) {
    try {
      if (Deno.statSync(p).isFile) return _path = p;
    } catch { /* not there */ }
  }
  return _path = undefined;
}
