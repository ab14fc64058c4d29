import assert from "node:assert/strict";
import { PLANTED_DEFAULT_ENTRIES } from "../guard/planted.ts";
import { holdLayers } from "./held_writer.ts";
import { listHeld, readHeld, removeHeld } from "./held_store.ts";
import type { LayerOp } from "./_layer_diff.ts";

/** A write root, its layer folder with an upper layer, and a canary folder outside both. */
async function _layout() {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_held_" }));
  for (const d of ["ws", "layer/u", "outside/dir"]) {
    await Deno.mkdir(`${base}/${d}`, { recursive: true });
  }
  await Deno.writeTextFile(`${base}/outside/dir/secret`, "CANARY-SECRET\n");
  const layer = { root: `${base}/ws`, dir: `${base}/layer` };
  const op = (rel: string, kind: LayerOp["kind"], entryKind: "file" | "dir"): LayerOp => ({
    rel,
    abs: `${layer.root}/${rel}`,
    upper: `${layer.dir}/u/${rel}`,
    kind,
    entry: { rel, kind: entryKind, ino: 1, size: 0, mtimeMs: 0, birthMs: 0, mode: 0o644 },
  });
  const hold = (ops: LayerOp[]) =>
    holdLayers(
      [layer],
      {
        workspace: layer.root,
        entries: PLANTED_DEFAULT_ENTRIES,
        trust: [],
        pathDirs: [],
        grantPaths: [layer.root],
      },
      [{ tool: "T", by: "--hold" }],
      () =>
        Promise.resolve({
          ops,
          view: { ino: 1, epoch: 0, view: new Map() },
          commit: () => {},
        }),
    );
  return { base, layer, op, hold };
}

Deno.test("a hold reads the layer where a folder swapped for a link leads nowhere: nothing of outside is held", async () => {
  const { base, layer, op, hold } = await _layout();
  // The walk saw a/secret in a folder; the sandbox's process swapped the folder for a link.
  await Deno.symlink(`${base}/outside/dir`, `${layer.dir}/u/a`);
  const report = await hold([op("a/secret", "write", "file")]);
  assert.equal(report.held, undefined, JSON.stringify(report));
  // Control: as a folder of the layer, the same file is held, with its content.
  await Deno.remove(`${layer.dir}/u/a`);
  await Deno.mkdir(`${layer.dir}/u/a`);
  await Deno.writeTextFile(`${layer.dir}/u/a/secret`, "the tool's\n");
  const held = await hold([op("a/secret", "write", "file")]);
  assert.ok(held.held, JSON.stringify(held));
  const found = listHeld().find((h) => h.id === held.held!.id)!;
  assert.equal(await Deno.readTextFile(`${found.dir}/0/u/a/secret`), "the tool's\n");
  assert.deepEqual(readHeld(found.id, found.dir).manifest?.roots[0].entries.map((e) => e.rel), [
    "a",
    "a/secret",
  ]);
  await removeHeld(found.dir);
});

Deno.test("a hold whose entry changed kind between the walk and the copy fails, leaving no set", async () => {
  const { layer, op, hold } = await _layout();
  await Deno.writeTextFile(`${layer.dir}/u/x`, "now a file\n");
  await assert.rejects(hold([op("x", "dir", "dir")]), /x changed while it was read/);
});
