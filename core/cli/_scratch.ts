/**
 * Scratch folders a command makes for itself (the empty workspace run from
 * corral's own folder, the demo's workspace): removed when the command
 * ends, whichever way it ends.
 *
 * @module
 */

const _made = new Set<string>();
let _hooked = false;

/**
 * A new empty temp folder (real path) that {@link removeScratch} deletes;
 * also deleted when the process unloads (`Deno.exit` included).
 */
export async function makeScratch(prefix: string): Promise<string> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix }));
  _made.add(dir);
  if (!_hooked) {
    _hooked = true;
    globalThis.addEventListener("unload", removeScratch);
  }
  return dir;
}

/** Delete every scratch folder made so far (what a tool wrote there too). */
export function removeScratch(): void {
  for (const dir of _made) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* already gone */ }
    _made.delete(dir);
  }
}
