/**
 * Temp folders that go away. Every folder made here is removed when the
 * module that made it unloads: for a test file that is the end of the file
 * (under `deno test --parallel` too, and after a failed test), so a test may
 * leave a process using its folder until then; for a bench script, its exit
 * (`Deno.exit` included). A test that owns its folder may remove it sooner
 * with {@link removeTree}. A folder may hold a read-only tree (a Deno cache,
 * a module store): removal makes it writable first where it must.
 *
 * Every folder the test helpers make is named `corral_test_*` (the bench's,
 * `corral_bench_*`). Where `CORRAL_TEST_TEMP_LOG` names a file, each
 * folder's path is appended to it as it is made: `.ci/run` checks after the
 * suite that none of them is left.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { removeTree, tempDir } from "./temp_dir.ts";
 * const dir = await tempDir("corral_test_doc_");
 * await Deno.mkdir(`${dir}/cache/npm`, { recursive: true });
 * await Deno.chmod(`${dir}/cache`, 0o555);
 * removeTree(dir);
 * assert.throws(() => Deno.lstatSync(dir), Deno.errors.NotFound);
 * removeTree(dir); // already gone: nothing to do
 * ```
 *
 * @module
 */

/** The prefix of every temp folder the test helpers make. */
export const TEST_PREFIX = "corral_test_";

const _made = new Set<string>();
let _listening = false;

/**
 * A new folder in the temp folder (`TMPDIR`, else `/tmp`), by its real path
 * (no link on the way), removed when the test file or script that made it
 * ends (its `unload` event).
 */
export async function tempDir(prefix: string = TEST_PREFIX): Promise<string> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix }));
  removeAtUnload(dir);
  const log = Deno.env.get("CORRAL_TEST_TEMP_LOG");
  if (log) await Deno.writeTextFile(log, `${dir}\n`, { append: true });
  return dir;
}

/** Remove `path` (a folder or a file) when the test file or script ends, if it is still there. */
export function removeAtUnload(path: string): void {
  _made.add(path);
  if (_listening) return;
  _listening = true;
  globalThis.addEventListener("unload", _removeAll);
}

/**
 * Remove `path` and all below it now, synchronously (an `unload` listener
 * cannot wait). Read-only folders inside are made writable first where
 * removal needs it; a path already gone is no error. Throws when the tree
 * cannot be removed (a folder made by {@link tempDir} is then tried again
 * at unload).
 */
export function removeTree(path: string): void {
  _removeTree(path);
  _made.delete(path);
}

function _removeTree(path: string): void {
  try {
    Deno.removeSync(path, { recursive: true });
    return;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    // chmod would follow a link named on its command line: never outside the tree.
    if (Deno.lstatSync(path).isSymlink) throw e;
  }
  // A read-only folder inside (a Deno cache, a code store): writable, then again.
  new Deno.Command("/bin/chmod", {
    args: ["-R", "u+rwx", "--", path],
    stdout: "null",
    stderr: "null",
  })
    .outputSync();
  try {
    Deno.removeSync(path, { recursive: true });
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

function _removeAll(): void {
  for (const path of [..._made]) {
    try {
      removeTree(path);
    } catch (e) {
      // Never thrown from unload: said, and left for the check after the suite to count.
      console.error(`testing/temp_dir.ts: cannot remove ${path}: ${e}`);
    }
  }
}
