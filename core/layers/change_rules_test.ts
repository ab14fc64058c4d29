import assert from "node:assert/strict";
import { PLANTED_DEFAULT_ENTRIES } from "../guard/planted.ts";
import { judgeChange, type RuleContext } from "./change_rules.ts";

const ctx: RuleContext = {
  workspace: "/ws",
  root: "/ws",
  entries: PLANTED_DEFAULT_ENTRIES,
  trust: [{ path: "/ws/plugins", what: "a plugin directory" }],
  pathDirs: ["/ws/bin", "/home/u/.local/bin"],
  grantPaths: ["/ws", "/ws/spool/out", "/ws/data"],
  hooksFolders: ["/ws/.husky"],
};
const kind = (p: string, k: Parameters<typeof judgeChange>[1] = "write") =>
  judgeChange(p, k, ctx).kind;

Deno.test("ordinary files, folders and links are applied", () => {
  for (
    const p of ["/ws/src/a.ts", "/ws/deep/x/y/z.txt", "/ws/.git/objects/ab/cdef", "/ws/README"]
  ) {
    assert.equal(kind(p), "apply", p);
    assert.equal(kind(p, "remove"), "apply", p);
  }
  assert.equal(kind("/ws/src/link", "symlink"), "apply");
  assert.equal(kind("/ws/.config", "dir"), "apply", "a folder on the way to an entry is harmless");
  assert.equal(kind("/ws/.vscode", "dir"), "refuse", "the entry itself is not made");
});

Deno.test("protected entries are refused at any depth, by what was written", () => {
  for (
    const p of [
      "/ws/.envrc",
      "/ws/a/b/.envrc",
      "/ws/x/.vscode/tasks.json",
      "/ws/.claude/settings.json",
      "/ws/pkg/.npmrc",
      "/ws/.config/git/config",
      "/ws/.gitmodules",
      "/ws/.ENVRC",
    ]
  ) {
    const v = judgeChange(p, "write", ctx);
    assert.equal(v.kind, "refuse", p);
    if (v.kind === "refuse") assert.match(v.why, /protected: ".+"/);
  }
  // Lifted by the operator: applied.
  const lifted = { ...ctx, entries: PLANTED_DEFAULT_ENTRIES.filter((e) => e !== ".envrc") };
  assert.equal(judgeChange("/ws/.envrc", "write", lifted).kind, "apply");
});

Deno.test("inside any repository: hooks, commondir, modules, worktrees, todo lists, alternates", () => {
  for (const repo of ["/ws/.git", "/ws/vendor/lib/.git", "/ws/a/b/c/.git"]) {
    for (
      const inner of [
        "hooks/pre-commit",
        "hooks/sub/x.sample",
        "commondir",
        "gitdir",
        "modules/x/config",
        "worktrees/w/HEAD",
        "rebase-merge/git-rebase-todo",
        "rebase-apply/patch",
        "sequencer/todo",
        "objects/info/alternates",
      ]
    ) {
      assert.equal(kind(`${repo}/${inner}`), "refuse", `${repo}/${inner}`);
    }
    assert.equal(kind(`${repo}/hooks/pre-commit.sample`), "apply");
    assert.equal(kind(`${repo}/hooks`, "dir"), "apply");
    assert.equal(kind(`${repo}/hooks/sub`, "dir"), "refuse");
    assert.equal(kind(`${repo}/config`), "git-config");
    assert.equal(kind(`${repo}/config.worktree`), "git-config");
    for (const ref of ["HEAD", "ORIG_HEAD", "refs/heads/main", "packed-refs", "index"]) {
      assert.equal(kind(`${repo}/${ref}`), "git-ref", ref);
    }
    assert.equal(kind(`${repo}/logs/HEAD`), "apply");
    // The repository itself: made, yes; a link or a file in its place, or removed, no.
    assert.equal(kind(repo, "dir"), "apply");
    assert.equal(kind(repo, "symlink"), "refuse");
    assert.equal(kind(repo, "write"), "refuse");
    assert.equal(kind(repo, "remove"), "refuse");
  }
});

Deno.test("the trust base, PATH folders, the hooks folder and links at or above a grant path", () => {
  const why = (p: string, k: Parameters<typeof judgeChange>[1] = "write") => {
    const v = judgeChange(p, k, ctx);
    return v.kind === "refuse" ? v.why : "";
  };
  assert.match(why("/ws/plugins/evil.ts"), /trust base \(a plugin directory\)/);
  assert.match(why("/ws/plugins", "remove"), /trust base/);
  assert.match(why("/ws/bin/git"), /on the user's PATH/);
  assert.equal(kind("/ws/bin", "dir"), "apply", "the PATH folder itself may be made");
  assert.match(why("/ws/.husky/pre-commit"), /core\.hooksPath/);
  assert.match(why("/ws/.husky", "remove"), /core\.hooksPath/);
  assert.match(why("/ws/spool", "symlink"), /grant path \/ws\/spool\/out/);
  assert.match(why("/ws/spool/out", "symlink"), /grant path/);
  assert.match(why("/ws/data", "write"), /grant path \/ws\/data/);
  assert.equal(kind("/ws/spool", "dir"), "apply");
  assert.equal(kind("/ws/spool/out/file"), "apply");
});

Deno.test("found by the property test: a repository made inside a protected entry, a folder for a repository's config", () => {
  // (git's rules came first: HEAD in a git directory named .envrc was a ref, and applied.)
  assert.equal(kind("/ws/d/.envrc/HEAD"), "refuse");
  assert.equal(kind("/ws/d/.envrc/refs/heads/main"), "refuse");
  assert.equal(kind("/ws/d/.envrc", "dir"), "refuse");
  // git reads its config from a file: a folder there, or anything in one, is no config.
  assert.equal(kind("/ws/r/.git/config", "dir"), "refuse");
  assert.equal(kind("/ws/r/.git/config/made.txt"), "refuse");
  assert.equal(kind("/ws/r/.git/config"), "git-config", "the file is judged by what it says");
  assert.equal(kind("/ws/r/.git/config.worktree/x"), "refuse");
});
