import assert from "node:assert/strict";
import { PLANTED_DEFAULT_ENTRIES } from "../guard/planted.ts";
import {
  configRefusal,
  indexRefusal,
  looseRefs,
  refsRefusal,
  refView,
  resolveRef,
} from "./_git_rules.ts";

async function _git(cwd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.name=U", "-c", "user.email=u@e", ...args],
    cwd,
    stdout: "piped",
    stderr: "null",
    env: { GIT_CONFIG_NOSYSTEM: "1" },
  }).output();
  return new TextDecoder().decode(out.stdout).trim();
}

Deno.test("a config change passes only when every changed key is harmless, as git reads it", async () => {
  const d = await Deno.makeTempDir();
  const file = async (name: string, text: string) => {
    await Deno.writeTextFile(`${d}/${name}`, text);
    return `${d}/${name}`;
  };
  const base = await file("base", "[core]\n\tbare = false\n\thooksPath = .husky\n");
  const ok = [
    "[core]\n\tbare = false\n\thooksPath = .husky\n[user]\n\tname = T\n",
    '[core]\n\tbare = false\n\thooksPath = .husky\n[remote "o"]\n\turl = https://x/y.git\n' +
    "\tfetch = +refs/heads/*:refs/remotes/o/*\n",
    '[core]\n\tbare = false\n\thooksPath = .husky\n[branch "m"]\n\tremote = o\n',
  ];
  for (const [i, text] of ok.entries()) {
    assert.equal(await configRefusal(base, await file(`ok${i}`, text)), undefined, text);
  }
  const bad: Array<[string, RegExp]> = [
    ["[core]\n\tbare = false\n\thooksPath = .husky\n\tfsmonitor = touch x\n", /core\.fsmonitor/],
    ["[core]\n\tbare = false\n", /core\.hookspath/i], // removing the user's hooks path
    ["[core]\n\tbare = false\n\thooksPath = evil\n", /core\.hookspath/i],
    ["[core]\n\tbare = false\n\thooksPath = .husky\n[include]\n\tpath = ../x\n", /include\.path/],
    ['[core]\n\tbare = false\n\thooksPath = .husky\n[filter "x"]\n\tclean = touch y\n', /filter/],
    ["[core]\n\tbare = false\n\thooksPath = .husky\n[alias]\n\tst = !touch z\n", /alias/],
    [
      '[core]\n\tbare = false\n\thooksPath = .husky\n[remote "e"]\n\turl = ext::sh -c touch% x\n',
      /transport helper/,
    ],
    // A crafted file git reads differently from a naive parser: a key continued over lines.
    ["[core]\n\tbare = false\n\thooksPath = .husky\n\tfsmonitor = \\\n touch w\n", /fsmonitor/],
    ["[core] fsmonitor = touch v\n\tbare = false\n\thooksPath = .husky\n", /fsmonitor/],
  ];
  for (const [i, [text, re]] of bad.entries()) {
    const why = await configRefusal(base, await file(`bad${i}`, text));
    assert.ok(why, `let through: ${text}`);
    assert.match(why!, re, text);
  }
  // A new repository's config (no "before"): the keys git init writes are harmless.
  const repo = await Deno.makeTempDir();
  await _git(repo, "init", "-q");
  assert.equal(await configRefusal(undefined, `${repo}/.git/config`), undefined);
  assert.match(
    (await configRefusal(undefined, await file("junk", "[core\n")))!,
    /cannot be checked/,
  );
});

Deno.test("refs and the index: refused only when the user's git would write out a protected path", async () => {
  const ws = await Deno.makeTempDir();
  await _git(ws, "init", "-q", "-b", "main");
  await Deno.writeTextFile(`${ws}/a.txt`, "a\n");
  await _git(ws, "add", "a.txt");
  await _git(ws, "commit", "-q", "-m", "one");
  const one = await _git(ws, "rev-parse", "HEAD");
  await Deno.writeTextFile(`${ws}/b.txt`, "b\n");
  await _git(ws, "add", "b.txt");
  await _git(ws, "commit", "-q", "-m", "two");
  const two = await _git(ws, "rev-parse", "HEAD");
  await Deno.writeTextFile(`${ws}/.envrc`, "touch x\n");
  await _git(ws, "add", ".envrc");
  await _git(ws, "commit", "-q", "-m", "evil");
  const evil = await _git(ws, "rev-parse", "HEAD");
  const gitDir = `${ws}/.git`;
  const view = (head: string) => refView((rel) => rel === "HEAD" ? `${head}\n` : undefined, []);
  const e = PLANTED_DEFAULT_ENTRIES;
  assert.equal(await refsRefusal(gitDir, view(one), view(two), e), undefined);
  assert.match((await refsRefusal(gitDir, view(two), view(evil), e))!, /\.envrc differs/);
  // A branch made at an evil commit: nothing before it, its tree holds .envrc.
  assert.match((await refsRefusal(gitDir, view(one), view(evil), e))!, /HEAD would move/);
  assert.match(
    (await refsRefusal(gitDir, view(one), view("0".repeat(40)), e))!,
    /git cannot read here/,
  );
  // Loose refs and packed refs, symbolic HEAD.
  assert.ok(looseRefs(gitDir).includes("refs/heads/main"));
  const packed = refView(
    (rel) =>
      rel === "packed-refs"
        ? `# pack-refs\n${one} refs/heads/main\n`
        : rel === "HEAD"
        ? "ref: refs/heads/main\n"
        : undefined,
    [],
  );
  assert.equal(resolveRef(packed, "HEAD"), one);
  // The index: staging .envrc is refused; staging b.txt is not.
  await _git(ws, "reset", "-q", "--hard", two);
  const before = `${ws}/index.before`;
  await Deno.copyFile(`${gitDir}/index`, before);
  await Deno.writeTextFile(`${ws}/c.txt`, "c\n");
  await _git(ws, "add", "c.txt");
  assert.equal(await indexRefusal(gitDir, before, `${gitDir}/index`, e), undefined);
  await Deno.writeTextFile(`${ws}/.envrc`, "touch y\n");
  await _git(ws, "add", "-f", ".envrc");
  assert.match((await indexRefusal(gitDir, before, `${gitDir}/index`, e))!, /stages \.envrc/);
});
