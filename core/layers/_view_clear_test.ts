// Clearing a sandbox's upper layer (core/layers/_view_clear.ts): what is stale, what stays
// (held entries, folders holding them, artifacts), and a link in place of a folder is never
// followed out of the layer: the canary beside it stays.
import assert from "node:assert/strict";
import { join } from "node:path";
import { clearEntries, staleEntries } from "./_view_clear.ts";
import { lowerSig, type Sig } from "./_tree_sig.ts";

async function _layer() {
  const base = await Deno.realPath(await Deno.makeTempDir());
  const root = join(base, "tree"), dir = join(base, "layer"), outside = join(base, "outside");
  for (const d of [root, join(dir, "u"), outside]) await Deno.mkdir(d, { recursive: true });
  return { base, root, dir, outside, upper: join(dir, "u") };
}

Deno.test("staleEntries: changed by others, removed by others, made again by others", async () => {
  const { root, dir, upper } = await _layer();
  const seen = new Map<string, Sig | null>();
  const both = async (rel: string, text: string) => {
    await Deno.writeTextFile(join(root, rel), text);
    await Deno.writeTextFile(join(upper, rel), text);
    seen.set(join(root, rel), await lowerSig(join(root, rel)));
  };
  await both("kept.txt", "same");
  await both("changed.txt", "v1");
  await both("removed.txt", "v1");
  await Deno.writeTextFile(join(root, "changed.txt"), "v2 by another");
  await Deno.remove(join(root, "removed.txt"));
  // A whiteout (a removal applied) whose path another session made again.
  await new Deno.Command("mknod", { args: [join(upper, "back.txt"), "c", "0", "0"] }).output();
  await Deno.writeTextFile(join(root, "back.txt"), "made again");
  // A folder of the layer the tree holds too, plain: nothing to clear.
  await Deno.mkdir(join(root, "d"));
  await Deno.mkdir(join(upper, "d"));
  seen.set(join(root, "d"), await lowerSig(join(root, "d")));
  await Deno.writeTextFile(join(root, "d", "new.txt"), "shows through a plain folder");
  const rules = { expected: (a: string) => seen.get(a), artifacts: new Set<string>(), all: false };
  const stale = (await staleEntries({ root, dir }, rules)).sort();
  assert.deepEqual(stale, ["back.txt", "changed.txt", "removed.txt"]);
  // With "all": everything, but an artifact and the folder holding it.
  await Deno.mkdir(join(upper, "masked"));
  await Deno.writeTextFile(join(upper, "masked", "secret"), "");
  const all = await staleEntries({ root, dir }, {
    ...rules,
    all: true,
    artifacts: new Set([join(root, "masked", "secret")]),
  });
  assert.deepEqual(all.sort(), ["back.txt", "changed.txt", "d", "kept.txt", "removed.txt"]);
});

Deno.test("clearEntries keeps what is held (by inode, or a path under a folder) and never follows a link", async () => {
  const { root, dir, upper, outside } = await _layer();
  await Deno.mkdir(join(upper, "a"));
  await Deno.writeTextFile(join(upper, "a", "open.txt"), "held");
  await Deno.writeTextFile(join(upper, "a", "free.txt"), "free");
  await Deno.mkdir(join(upper, "cwd", "deep"), { recursive: true });
  await Deno.writeTextFile(join(upper, "gone.txt"), "x");
  // A link where a folder was: its "f" must not be reached through it.
  await Deno.writeTextFile(join(outside, "f"), "CANARY");
  await Deno.symlink(outside, join(upper, "l"));
  const ino = (await Deno.stat(join(upper, "a", "open.txt"))).ino!;
  const r = await clearEntries(
    { root, dir },
    ["a", "a/open.txt", "a/free.txt", "cwd", "cwd/deep", "gone.txt", "l/f"],
    { inos: new Set([ino]), paths: [join(root, "cwd", "deep")] },
  );
  assert.deepEqual(r.cleared.sort(), ["a/free.txt", "gone.txt"]);
  assert.deepEqual(r.kept.sort(), ["a", "a/open.txt", "cwd", "cwd/deep", "l/f"]);
  assert.equal(await Deno.readTextFile(join(outside, "f")), "CANARY");
  assert.equal(await Deno.readTextFile(join(upper, "a", "open.txt")), "held");
});

Deno.test("staleEntries: a folder the sandbox made again (opaque in its layer) hides what others put in it: cleared whole", async () => {
  const { base, root, dir, upper } = await _layer();
  await Deno.mkdir(join(dir, "w"));
  await Deno.mkdir(join(dir, "m"));
  await Deno.mkdir(join(root, "out"));
  await Deno.writeTextFile(join(root, "out", "old.txt"), "old\n");
  // A real overlay makes the folder again, as a sandbox's would (root: trusted xattrs; else user).
  const opts = Deno.uid() === 0
    ? "redirect_dir=off,metacopy=off,index=off,xino=off"
    : "userxattr,metacopy=off,index=off,xino=off";
  const made = await new Deno.Command("unshare", {
    args: [
      ...(Deno.uid() === 0 ? ["-m"] : ["-Urm"]),
      "/bin/sh",
      "-c",
      `mount -t overlay overlay -o lowerdir=${root},upperdir=${upper},workdir=${dir}/w,${opts} ` +
      `${dir}/m && rm -rf ${dir}/m/out && mkdir ${dir}/m/out && echo mine > ${dir}/m/out/a.txt`,
    ],
  }).output();
  assert.equal(made.code, 0, new TextDecoder().decode(made.stderr));
  // Applied: the tree's folder holds its file only; then another session adds b.txt.
  await Deno.remove(join(root, "out", "old.txt"));
  await Deno.writeTextFile(join(root, "out", "a.txt"), "mine\n");
  const seen = new Map([
    [join(root, "out"), await lowerSig(join(root, "out"))],
    [join(root, "out", "a.txt"), await lowerSig(join(root, "out", "a.txt"))],
  ]);
  const rules = { expected: (a: string) => seen.get(a), artifacts: new Set<string>(), all: false };
  assert.deepEqual(await staleEntries({ root, dir }, rules), [], "nothing hidden yet");
  await Deno.writeTextFile(join(root, "out", "b.txt"), "theirs\n");
  assert.deepEqual((await staleEntries({ root, dir }, rules)).sort(), ["out", "out/a.txt"]);
  await Deno.remove(base, { recursive: true }).catch(() => {});
});
