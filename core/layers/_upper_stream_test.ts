// The layer read as a stream (find's records, parsed from bytes) gives what lstat gives, finds
// whiteouts, and yields every name that is not UTF-8 marked and escaped (never dropped unsaid).
import assert from "node:assert/strict";
import { countLayer, layerMemory } from "./_layer_diff.ts";
import { layerQuota } from "./layer_quota.ts";
import { streamUpper } from "./_upper_stream.ts";

Deno.test("streamUpper: kinds, sizes, times and modes as lstat reads them; whiteouts; odd names yielded, marked and escaped", async () => {
  const u = await Deno.makeTempDir();
  const made = await new Deno.Command("bash", {
    args: [
      "-c",
      `cd "$1" && mkdir -p a/b 'sp ace' && printf hi > a/b/x && chmod 4750 a/b/x && ` +
      `ln -s a/b/x link && touch -d '2020-01-02 03:04:05.123456' 'sp ace/t' && ` +
      `printf q > $'bad\\xffname' && mkdir $'d\\xfe' && printf abc > $'d\\xfe/in' && mknod wh c 0 0 && mknod $'w\\xfd' c 0 0`,
      "mk",
      u,
    ],
  }).output();
  assert.ok(made.success, new TextDecoder().decode(made.stderr));
  const bad: string[] = [];
  const seen = new Map<
    string,
    { kind: string; size: number; mtimeMs: number; mode: number; notUtf8?: string }
  >();
  let hidden = 0, hiddenBytes = 0;
  const counted = (size: number) => void (hidden++, hiddenBytes += size);
  for await (const chunk of streamUpper(u, { chunk: 2, hidden: counted })) {
    for (const e of chunk) {
      if (e.notUtf8) bad.push(`${e.notUtf8}:${e.kind}:${e.rel}`);
      else seen.set(e.rel, e);
    }
  }
  assert.deepEqual(
    [...seen.keys()].sort(),
    ["a", "a/b", "a/b/x", "link", "sp ace", "sp ace/t", "wh"],
  );
  for (const [rel, e] of seen) {
    if (rel === "wh") continue;
    const st = Deno.lstatSync(`${u}/${rel}`);
    assert.equal(e.size, st.size, rel);
    assert.equal(e.mtimeMs, st.mtime!.getTime(), rel);
    assert.equal(e.mode, st.mode! & 0o7777, rel);
  }
  assert.equal(seen.get("a/b/x")!.kind, "file");
  assert.equal(seen.get("a/b/x")!.mode, 0o4750);
  assert.equal(seen.get("link")!.kind, "symlink");
  assert.equal(seen.get("wh")!.kind, "whiteout");
  // What that folder holds is not yielded apart, but counted (a quota counts it).
  assert.deepEqual([hidden, hiddenBytes], [1, 3]);
  // The folder with an odd name is yielded once, with what it holds; names escaped.
  assert.deepEqual(bad.sort(), [
    "entry:other:bad\\xffname",
    "folder:other:d\\xfe",
    "removal:other:w\\xfd",
  ]);
  await Deno.remove(u, { recursive: true });
});

Deno.test("countLayer: what a folder whose name is not UTF-8 holds counts against the quota", async () => {
  const root = await Deno.makeTempDir(), dir = await Deno.makeTempDir();
  const made = await new Deno.Command("bash", {
    args: ["-c", `mkdir -p "$1/u/$(printf 'd\\376')" && cd "$_" && touch a b c d e`, "mk", dir],
  }).output();
  assert.ok(made.success, new TextDecoder().decode(made.stderr));
  const count = async (entries: number) =>
    (await countLayer(
      { root, dir },
      layerMemory(),
      new Set(),
      layerQuota({
        layer_max_entries: entries,
      }),
    )).count.over;
  // Six entries: the folder and the five it holds, never yielded apart.
  assert.equal(await count(5), "entries");
  assert.equal(await count(6), undefined); // control: within the quota
  await Deno.remove(root, { recursive: true });
  await Deno.remove(dir, { recursive: true });
});
