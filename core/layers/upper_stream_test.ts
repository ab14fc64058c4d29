// The layer read as a stream (find's records, parsed from bytes) gives what lstat gives, finds
// whiteouts, and hands on every name that is not UTF-8 (never dropped unsaid, never mangled).
import assert from "node:assert/strict";
import { streamUpper } from "./upper_stream.ts";

Deno.test("streamUpper: kinds, sizes, times and modes as lstat reads them; whiteouts; odd names handed on", async () => {
  const u = await Deno.makeTempDir();
  const made = await new Deno.Command("bash", {
    args: [
      "-c",
      `cd "$1" && mkdir -p a/b 'sp ace' && printf hi > a/b/x && chmod 4750 a/b/x && ` +
      `ln -s a/b/x link && touch -d '2020-01-02 03:04:05.123456' 'sp ace/t' && ` +
      `printf q > $'bad\\xffname' && mkdir $'d\\xfe' && touch $'d\\xfe/in' && mknod wh c 0 0`,
      "mk",
      u,
    ],
  }).output();
  assert.ok(made.success, new TextDecoder().decode(made.stderr));
  const bad: string[] = [];
  const seen = new Map<string, { kind: string; size: number; mtimeMs: number; mode: number }>();
  for await (
    const chunk of streamUpper(u, {
      chunk: 2,
      onBadName: (b) => bad.push([...b].map((x) => x.toString(16).padStart(2, "0")).join("")),
    })
  ) {
    for (const e of chunk) seen.set(e.rel, e);
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
  // The folder with an odd name is handed on once, with what it holds.
  assert.deepEqual(bad.sort(), ["626164ff6e616d65", "64fe"]);
  await Deno.remove(u, { recursive: true });
});
