import assert from "node:assert/strict";
import { assertNotPlanted, matchPlanted, PLANTED_DEFAULT_ENTRIES } from "./planted.ts";

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
