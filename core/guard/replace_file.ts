/**
 * Writing a file by replacement, never in place: the new content goes to
 * a temporary file in a private folder beside it (mode 0700, named
 * ./temp_names.ts's prefix and a random token), is flushed to disk, gets
 * its mode (the old file's, or the default for a new file), and is then
 * renamed over the path. A hard link the path was (pnpm's `node_modules`,
 * a `cp -al` tree) is broken, never written through; a crash leaves the old
 * file or the new one, whole. A new file (`createNew`) is linked into
 * place, which fails when the path exists meanwhile. The private folder is
 * removed before the call returns, whatever happened.
 *
 * Used by every write of corral's own toolsets (toolsets/files/). Where
 * the folder cannot hold the private folder (a grant of the file alone),
 * a file with one link is written in place, and a hard link is refused.
 *
 * @module
 */
import { basename, dirname, join } from "./_posix_path.ts";
import { TEMP_PREFIX, tempToken } from "./temp_names.ts";

/** How {@link replaceFile} writes. */
export interface ReplaceOptions {
  /** Fail when the path exists (else it is replaced). */
  createNew?: boolean;
  /** The new file's permission bits (default: the old file's, else 0666 less the umask). */
  mode?: number;
}

/**
 * Write `bytes` at `path` by replacement.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { replaceFile } from "./replace_file.ts";
 * const d = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${d}/store`, "shared");
 * await Deno.link(`${d}/store`, `${d}/a.txt`);
 * await replaceFile(`${d}/a.txt`, new TextEncoder().encode("new"));
 * assert.equal(await Deno.readTextFile(`${d}/a.txt`), "new");
 * assert.equal(await Deno.readTextFile(`${d}/store`), "shared");
 * assert.deepEqual([...Deno.readDirSync(d)].map((e) => e.name).sort(), ["a.txt", "store"]);
 * ```
 */
export async function replaceFile(
  path: string,
  bytes: Uint8Array,
  o: ReplaceOptions = {},
): Promise<void> {
  const old = await Deno.lstat(path).catch(() => null);
  if (old && o.createNew) throw new Deno.errors.AlreadyExists(`File exists: ${path}`);
  const priv = join(dirname(path), `${TEMP_PREFIX}${tempToken()}`);
  try {
    await Deno.mkdir(priv, { mode: 0o700 });
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists || err instanceof Deno.errors.NotFound) throw err;
    return await _inPlace(path, bytes, old, o, err);
  }
  try {
    const tmp = join(priv, basename(path));
    const mode = o.mode ?? (old?.isFile ? (old.mode ?? 0o644) & 0o777 : undefined);
    const f = await Deno.open(tmp, {
      write: true,
      createNew: true,
      ...(mode !== undefined ? { mode } : {}),
    });
    try {
      for (let at = 0; at < bytes.length;) at += await f.write(bytes.subarray(at));
      await f.syncData();
    } finally {
      f.close();
    }
    if (mode !== undefined) await Deno.chmod(tmp, mode);
    if (o.createNew) await Deno.link(tmp, path); // fails when the path was made meanwhile
    else await Deno.rename(tmp, path);
  } finally {
    await Deno.remove(priv, { recursive: true }).catch(() => {});
  }
}

/** No private folder can be made beside the file: in place, for a file with one link only. */
async function _inPlace(
  path: string,
  bytes: Uint8Array,
  old: Deno.FileInfo | null,
  o: ReplaceOptions,
  why: unknown,
): Promise<void> {
  if (old && (!old.isFile || (old.nlink ?? 1) > 1)) {
    throw new Error(
      `cannot write ${path}: it is a hard link shared with other files, and its folder cannot ` +
        `hold the new version beside it (${(why as Error).message}); it is never written in place`,
    );
  }
  await Deno.writeFile(path, bytes, {
    createNew: o.createNew ?? false,
    ...(o.mode !== undefined ? { mode: o.mode } : {}),
  });
}
