import assert from "node:assert/strict";
import { holdPlaceholders, placeholderCount } from "./placeholders.ts";
import { assertNotPlanted, matchPlanted, PLANTED_DEFAULT_ENTRIES } from "./planted.ts";
import { plantedMounts } from "./planted_mounts.ts";
import { plantedPaths } from "./planted_scan.ts";

const _ws = async () => await Deno.realPath(await Deno.makeTempDir({ prefix: "planted_" }));

Deno.test("entries match by path component at any depth, and the folders on the way", () => {
  const e = PLANTED_DEFAULT_ENTRIES;
  for (const p of [".git/config", "a/b/.git/hooks/x", ".git", "x/.vscode", ".VSCode/tasks.json"]) {
    assert.ok(matchPlanted(p, e), p);
  }
  for (const p of [".git/HEAD", ".git/objects/ab/cd", "src/git/config", "my.envrc", "vscode"]) {
    assert.equal(matchPlanted(p, e), undefined, p);
  }
});

Deno.test("the files tools' refusal follows the real path and core.hooksPath", async () => {
  const ws = await _ws();
  await Deno.mkdir(`${ws}/.git`);
  await Deno.writeTextFile(`${ws}/.git/config`, "[core]\n\thooksPath = .husky/_\n");
  const ctx = { workspace: ws, grant: { write: [ws] } };
  assert.throws(() => assertNotPlanted(`${ws}/.git/hooks/x`, "link/x", ctx), /\.git\/hooks/);
  assert.throws(
    () => assertNotPlanted(`${ws}/.husky/pre-commit`, ".husky/pre-commit", ctx),
    /hooksPath/,
  );
  assert.throws(() => assertNotPlanted(`${ws}/.husky`, ".husky", ctx), /hooksPath/);
  assertNotPlanted(`${ws}/src/a.ts`, "src/a.ts", ctx);
  // The operator's list replaces the defaults.
  assertNotPlanted(`${ws}/.vscode/x`, ".vscode/x", { ...ctx, grant: { write: [ws], planted: [] } });
});

Deno.test("a placeholder is shared by sandboxes of one process and goes with the last", async () => {
  const ws = await _ws();
  const one = plantedMounts({ write: [ws], workspace: ws, protect: [], hide: [] });
  const two = plantedMounts({ write: [ws], workspace: ws, protect: [], hide: [] });
  assert.ok(two.protect.includes(`${ws}/.git`), "the second sandbox protects .git too");
  assert.equal(placeholderCount(`${ws}/.git`), 2);
  one.release();
  assert.ok(Deno.statSync(`${ws}/.envrc`).isFile);
  assert.ok(Deno.statSync(`${ws}/.git`).isDirectory);
  two.release();
  assert.deepEqual([...Deno.readDirSync(ws)], []);
});

Deno.test("a placeholder that was written to is kept", async () => {
  const ws = await _ws();
  const release = holdPlaceholders([{ path: `${ws}/.envrc`, dir: false }]);
  await Deno.writeTextFile(`${ws}/.envrc`, "user's own\n");
  release();
  assert.equal(await Deno.readTextFile(`${ws}/.envrc`), "user's own\n");
});

Deno.test("repositories: .git/commondir holds '.', a gitfile is protected whole, nested ones found", async () => {
  const ws = await _ws();
  await Deno.mkdir(`${ws}/.git/hooks`, { recursive: true });
  await Deno.mkdir(`${ws}/a/b/.git`, { recursive: true });
  await Deno.writeTextFile(`${ws}/a/b/.git/HEAD`, "ref: refs/heads/main\n"); // (an empty one is kept whole)
  await Deno.mkdir(`${ws}/wt`);
  await Deno.writeTextFile(`${ws}/wt/.git`, "gitdir: /elsewhere\n");
  const found = plantedPaths([ws], ws);
  const at = (p: string) => found.find((f) => f.path === `${ws}/${p}`);
  assert.equal(at(".git/commondir")?.text, ".\n");
  assert.equal(at(".git/hooks")?.exists, true);
  assert.equal(at("a/b/.git/config")?.exists, false);
  assert.equal(at("wt/.git")?.exists, true);
  assert.equal(at(".git"), undefined, "an existing repository stays writable");
});

Deno.test("a protected entry that is a symbolic link refuses the sandbox", async () => {
  const ws = await _ws();
  await Deno.symlink("/tmp", `${ws}/.vscode`);
  assert.throws(() => plantedPaths([ws], ws), /symbolic link .*"\.vscode\/"/);
});

Deno.test("a write root that does not exist yet gets no placeholders (and still starts)", async () => {
  const ws = await _ws();
  const m = plantedMounts({ write: [`${ws}/out`], workspace: ws, protect: [], hide: [] });
  assert.deepEqual(m.protect, []);
  m.release();
  assert.deepEqual([...Deno.readDirSync(ws)], []);
});

Deno.test("placeholders are never made or removed through a folder swapped for a symlink", async () => {
  const ws = await _ws();
  const outside = await _ws();
  await Deno.mkdir(`${ws}/out`);
  await Deno.symlink(outside, `${ws}/link`);
  const m = plantedMounts({ write: [`${ws}/link`], workspace: ws, protect: [], hide: [] });
  m.release();
  assert.deepEqual([...Deno.readDirSync(outside)], [], "nothing made through the link");
  const release = holdPlaceholders([{ path: `${ws}/out/.envrc`, dir: false }]);
  Deno.renameSync(`${ws}/out`, `${ws}/out.real`);
  Deno.symlinkSync(outside, `${ws}/out`);
  Deno.writeTextFileSync(`${outside}/.envrc`, "");
  release();
  assert.ok(Deno.statSync(`${outside}/.envrc`).isFile, "nothing removed through the link");
});

Deno.test("a missing trust-base file inside a write grant is held by an empty file, a folder by a folder", async () => {
  const ws = await _ws();
  const m = plantedMounts({
    write: [ws],
    workspace: ws,
    protect: [`${ws}/permissions.json`, `${ws}/plugins`, `${ws}/a/b.json`],
    hide: [],
  });
  assert.ok(Deno.statSync(`${ws}/permissions.json`).isFile);
  assert.ok(Deno.statSync(`${ws}/plugins`).isDirectory);
  assert.ok(Deno.statSync(`${ws}/a`).isDirectory);
  m.release();
  assert.deepEqual([...Deno.readDirSync(ws)], []);
});
