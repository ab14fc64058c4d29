// A sandbox's start trusts a file's earlier hash only while the file's stamp
// (size, inode, mtime, ctime) is the one it had when it was hashed: a file
// rewritten at the same size with its modification time set back is read and
// refused again (the change time moved), and so is one changed in place.
import assert from "node:assert/strict";
import { fileStamp, FileStamps, stampedGraph } from "./_file_stamps.ts";
import { pinGraph, sha256Hex } from "./module_graph.ts";
import { pinsRefusal } from "./sandbox_files.ts";

/** Wait until a file written now is old enough to be trusted by its stamp (3 s). */
async function _aged(): Promise<void> {
  await new Promise((r) => setTimeout(r, 3100));
}

Deno.test("a stamped hash holds only while the stamp holds: same size with mtime set back, or rewritten, is read again and refused", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/tool.ts`;
    const other = `${dir}/other.ts`;
    await Deno.writeTextFile(file, "export const a = 1;\n");
    await Deno.writeTextFile(other, `import "./tool.ts";\nexport const b = 2;\n`);
    await _aged();
    const mtime = Deno.statSync(file).mtime!;
    const pins = await pinGraph([other]);
    const stamps = new FileStamps(`${dir}/stamps.json`);
    const { pins: stamped } = await stampedGraph([other], stamps);
    assert.deepEqual(stamped, pins);
    assert.equal(stamps.known(file)?.hash, pins[file]);
    stamps.save();
    // Kept for the next start.
    const again = new FileStamps(`${dir}/stamps.json`);
    assert.equal(again.known(file)?.hash, pins[file]);
    assert.deepEqual(again.known(other)?.imports, [file]);
    // The control: unchanged, nothing refused.
    assert.equal(await pinsRefusal(pins), undefined);
    // The attack: same size, other bytes, modification time set back to the stamped one.
    await Deno.writeTextFile(file, "export const a = 7;\n");
    await Deno.utime(file, mtime, mtime);
    assert.equal(Deno.statSync(file).size, 20);
    assert.equal(Deno.statSync(file).mtime!.getTime(), mtime.getTime());
    assert.equal(again.known(file), undefined, "the change time moved: not trusted");
    assert.match((await pinsRefusal(pins)) ?? "", /tool\.ts" changed since corral checked it/);
    // Once old again, its new stamp names its new hash only.
    await _aged();
    const now = await sha256Hex(Deno.readFileSync(file));
    again.remember(file, now, undefined, fileStamp(file));
    assert.equal(again.known(file)?.hash, now);
    assert.notEqual(now, pins[file]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a file changed within the last 3 s is never trusted by its stamp", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/young.ts`;
    await Deno.writeTextFile(file, "export {};\n");
    const stamps = new FileStamps();
    assert.equal(fileStamp(file), undefined);
    stamps.remember(file, "whatever");
    assert.equal(stamps.known(file), undefined);
    const { pins } = await stampedGraph([file], stamps);
    assert.equal(pins[file], await sha256Hex(Deno.readFileSync(file)));
    assert.equal(stamps.known(file), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
