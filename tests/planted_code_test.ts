// Planted code (issue 20): a write grant on a git repository never lets a
// tool leave behind a file that the user's own git, editor or shell runs
// outside the sandbox. Real git, real bwrap, the built-in tools.
import assert from "node:assert/strict";
import { parsePolicy } from "../core/config/policy.ts";
import { matchPlanted, PLANTED_DEFAULT_ENTRIES } from "../core/guard/planted.ts";
import { Registry } from "../core/registry/registry.ts";
import { Reporter } from "../core/tool/reporter.ts";
import { runCli, tempLayout } from "./_helpers.ts";

const _QUIET = () => new Reporter({ sink: () => {}, color: false });

async function _git(cwd: string, ...args: string[]) {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.name=User", "-c", "user.email=user@example.com", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
    // The user's own git: no sandbox, the host's environment.
    env: { GIT_CONFIG_NOSYSTEM: "1" },
  }).output();
  return {
    code: out.code,
    text: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
  };
}

/** A git repository workspace with one commit, its registry, and a canary path outside. */
async function _repo(extra: Record<string, unknown> = {}) {
  const { ws, outside } = await tempLayout();
  assert.equal((await _git(ws, "init", "-q")).code, 0);
  await Deno.writeTextFile(`${ws}/a.txt`, "one\n");
  await _git(ws, "add", "a.txt");
  assert.equal((await _git(ws, "commit", "-q", "-m", "init")).code, 0);
  const policyText = JSON.stringify({
    toolsets: {
      files: { read: ["."], write: ["."] },
      system: { run: ["bash"], read: ["."], write: ["."] },
    },
    tools: {
      DeleteFile: { confirm: "always" },
      CreateFile: { confirm: "always" },
      MoveFile: { confirm: "always" },
    },
    ...extra,
  });
  const policy = parsePolicy(policyText, `${outside}/policy.json`, ws);
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: _QUIET(),
  });
  for (const t of ["RunBashCode", "CreateFile"]) {
    assert.equal(registry.get(t)?.status, "loaded", JSON.stringify(registry.problems));
  }
  return { ws, outside, registry, canary: `${outside}/CANARY` };
}

async function _exists(p: string): Promise<boolean> {
  return await Deno.lstat(p).then(() => true, () => false);
}

/** Which of `paths` exist (after `close()`, which waits until the sandboxes are gone). */
async function _gone(paths: string[]): Promise<string[]> {
  const left: string[] = [];
  for (const p of paths) if (await _exists(p)) left.push(p);
  return left;
}

/** The user's own git status and commit, outside any sandbox. */
async function _userGit(ws: string) {
  await _git(ws, "status");
  await Deno.writeTextFile(`${ws}/user.txt`, `${crypto.randomUUID()}\n`);
  await _git(ws, "add", "user.txt");
  return await _git(ws, "commit", "-q", "-m", "user's own commit");
}

Deno.test("jailed bash cannot plant code that the user's git status or git commit runs", async () => {
  const { ws, registry, canary } = await _repo();
  const payload = `#!/bin/sh\ntouch ${canary}\n`;
  const attacks = [
    // hooks, made executable
    `mkdir -p .git/hooks; printf '${payload}' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`,
    `printf '${payload}' > .git/hooks/post-commit; chmod +x .git/hooks/post-commit`,
    `rm -rf .git/hooks; mkdir .git/hooks`,
    // config: fsmonitor, hooksPath, through git itself and by hand
    `git config core.fsmonitor 'touch ${canary}; false'`,
    `printf '[core]\\n\\tfsmonitor = touch ${canary}\\n' >> .git/config`,
    `mkdir -p evil && printf '${payload}' > evil/pre-commit && chmod +x evil/pre-commit && ` +
    `git config core.hooksPath evil`,
    `printf '[core]\\n\\thooksPath = evil\\n' > .git/config.worktree`,
    // a common dir of the tool's own, with its config
    `git init -q other && printf '[core]\\n\\tfsmonitor = touch ${canary}\\n' >> other/.git/config && ` +
    `echo ../other/.git > .git/commondir`,
    `rm -f .git/commondir; echo ../other/.git > .git/commondir`,
    // replace the repository: rename it away, or swap the folder for a link
    `mv .git .git-old`,
    `mv .git/hooks .git/h2; mv .git/config .git/c2`,
    `ln -sfn /tmp .git/hooks; ln -sf ../evil/pre-commit .git/hooks/pre-commit`,
    `git init -q . && git config core.fsmonitor 'touch ${canary}; false'`,
    // gitmodules and modules
    `printf '[submodule "x"]\\n\\tpath = x\\n\\turl = ../x\\n' > .gitmodules; mkdir -p .git/modules/x`,
  ];
  try {
    for (const code of attacks) {
      const res = await registry.call("RunBashCode", { code });
      assert.equal(typeof res.success, "boolean", code);
    }
    // Through the files tools alone.
    const files: Array<[string, Record<string, unknown>]> = [
      ["CreateFile", { filepath: ".git/hooks/pre-commit", content: payload }],
      ["ReplaceTextInFile", {
        filepath: ".git/config",
        search: "[core]",
        replace: `[core]\n\tfsmonitor = touch ${canary}; false\n\thooksPath = evil`,
      }],
      ["CreateFile", { filepath: ".git/config.worktree", content: `[core]\n\thooksPath = evil\n` }],
      ["CreateFile", { filepath: ".git/commondir", content: "../other/.git\n", overwrite: true }],
      ["MoveFile", { source: ".git", destination: "moved" }],
      ["MoveFile", { source: "a.txt", destination: ".git/config", overwrite: true }],
      ["DeleteFile", { filepath: ".git/config" }],
    ];
    for (const [tool, args] of files) {
      const res = await registry.call(tool, args);
      assert.equal(res.success, false, `${tool} ${JSON.stringify(args)} was let through`);
      assert.match(String(res.error), /is protected: ".+" holds what other programs run/);
      assert.match(String(res.error), /"unprotect": \[/);
    }
    // Git still works inside the sandbox for ordinary commits.
    const commit = await registry.call("RunBashCode", {
      code: "echo two >> a.txt && git add a.txt && GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t " +
        "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t git commit -q -m 'from the sandbox' && " +
        "git log --oneline | head -1",
    });
    assert.equal(commit.success, true, JSON.stringify(commit));
    assert.match(String(commit.stdout), /from the sandbox/);
  } finally {
    await registry.close();
  }
  const user = await _userGit(ws);
  assert.equal(user.code, 0, user.text);
  assert.equal(await _exists(canary), false, "planted code ran in the user's git");
  assert.match((await _git(ws, "log", "--format=%s")).text, /user's own commit\nfrom the sandbox/);
});

Deno.test("jailed bash and the files tools cannot create editor, agent or shell files that others obey", async () => {
  const { ws, registry } = await _repo();
  const names = [".envrc", ".vscode/tasks.json", ".bashrc", ".mcp.json", ".claude/settings.json"];
  try {
    for (const n of names) {
      await registry.call("RunBashCode", {
        code: `mkdir -p "$(dirname ${n})"; echo 'touch /tmp/planted' > ${n}; ` +
          `ln -s /tmp/x ${n}.link; mv ${n} ${n}.x`,
      });
      const res = await registry.call("CreateFile", { filepath: n, content: "x" });
      assert.equal(res.success, false, n);
      // At any depth, by name, for the files tools.
      const deep = await registry.call("CreateFile", { filepath: `sub/dir/${n}`, content: "x" });
      assert.equal(deep.success, false, `sub/dir/${n}`);
      assert.match(String(deep.error), /is protected/);
    }
    // A symlink made by bash does not carry the files tools there.
    await registry.call("RunBashCode", { code: "ln -s .git/hooks hooklink" });
    const via = await registry.call("CreateFile", { filepath: "hooklink/pre-push", content: "x" });
    assert.equal(via.success, false);
  } finally {
    await registry.close();
  }
  // Nothing made by the attempts, and no placeholder, is left once the sandboxes ended.
  const tops = [...new Set(names.map((n) => n.split("/")[0]))];
  assert.deepEqual(await _gone(tops.map((n) => `${ws}/${n}`)), []);
});

Deno.test("an existing nested repository is protected like the workspace's own", async () => {
  const { ws, registry, canary } = await _repo();
  await registry.close();
  const sub = `${ws}/vendor/lib`;
  await Deno.mkdir(sub, { recursive: true });
  await _git(sub, "init", "-q");
  const again = await Registry.create({
    workspace: ws,
    policy: registry.policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: _QUIET(),
  });
  try {
    await again.call("RunBashCode", {
      code: `cd vendor/lib && git config core.fsmonitor 'touch ${canary}; false'; ` +
        `printf '#!/bin/sh\\ntouch ${canary}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`,
    });
  } finally {
    await again.close();
  }
  await _git(sub, "status");
  await Deno.writeTextFile(`${sub}/f`, "x");
  await _git(sub, "add", "f");
  await _git(sub, "commit", "-q", "-m", "x");
  assert.equal(await _exists(canary), false);
});

Deno.test("a workspace without a repository: no repository can be made inside, and no .git is left", async () => {
  const { ws, outside } = await tempLayout();
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: {
        system: { run: ["bash"], read: ["."], write: ["."] },
        files: { read: ["."], write: ["."] },
      },
    }),
    `${outside}/p.json`,
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: _QUIET(),
  });
  try {
    const res = await registry.call("RunBashCode", { code: "git init -q . ; ls -A .git | wc -l" });
    assert.match(String(res.stdout), /^0$/m);
    const mk = await registry.call("RunBashCode", { code: "echo hi > ok.txt && cat ok.txt" });
    assert.match(String(mk.stdout), /hi/);
    // The placeholders are there while the sandboxes live, but no listing shows them.
    assert.ok((await Deno.lstat(`${ws}/.envrc`)).isFile);
    const list = await registry.call("ListFiles", { path: ".", recursive: true });
    const shown = (list.entries as Array<{ path: string }>).map((e) => e.path);
    assert.ok(shown.includes("ok.txt"), String(shown));
    assert.deepEqual(shown.filter((p) => matchPlanted(p, PLANTED_DEFAULT_ENTRIES)), []);
  } finally {
    await registry.close();
  }
  // Placeholders go with the sandbox: close() returns once they are removed.
  assert.deepEqual(await _gone([`${ws}/.git`, `${ws}/.envrc`, `${ws}/.vscode`]), []);
  const left = (await Array.fromAsync(Deno.readDir(ws))).map((e) => e.name);
  assert.ok(left.includes("ok.txt"));
  assert.deepEqual(left.filter((p) => matchPlanted(p, PLANTED_DEFAULT_ENTRIES)), []);
});

Deno.test("unprotect lifts exactly one entry, and the banner says so", async () => {
  const { ws, registry } = await _repo({ unprotect: [".vscode/"] });
  try {
    const ok = await registry.call("CreateFile", { filepath: ".vscode/tasks.json", content: "{}" });
    assert.equal(ok.success, true, JSON.stringify(ok));
    const no = await registry.call("CreateFile", { filepath: ".idea/x.xml", content: "x" });
    assert.equal(no.success, false);
    const bash = await registry.call("RunBashCode", {
      code: "echo 1 > .vscode/b.json && echo ok; echo 1 > .envrc || echo refused",
    });
    assert.match(String(bash.stdout), /ok/);
    assert.match(String(bash.stdout) + String(bash.stderr), /refused|Read-only/);
  } finally {
    await registry.close();
  }
  assert.equal(await Deno.readTextFile(`${ws}/.vscode/b.json`), "1\n");
  const policyFile = `${ws}/../outside/banner-policy.json`;
  await Deno.writeTextFile(
    policyFile,
    JSON.stringify({ toolsets: { files: { read: ["."], write: ["."] } }, unprotect: [".vscode"] }),
  );
  const res = await runCli(["list", "--workspace", ws, "--permissions", policyFile]);
  assert.match(res.stderr, /lifts the protection of "\.vscode\/"/);
  assert.doesNotMatch(res.stderr, /lifts the protection of "\.idea/);
  const typo = `${ws}/../outside/typo-policy.json`;
  await Deno.writeTextFile(typo, JSON.stringify({ unprotect: [".vscod"] }));
  const bad = await runCli(["list", "--workspace", ws, "--permissions", typo]);
  assert.notEqual(bad.code, 0);
  assert.match(
    bad.stderr,
    /unprotect\[0\]: "\.vscod" is not a protected default \(did you mean "\.vscode\/"\?\)/,
  );
});

Deno.test("a missing trust-base path inside a write grant cannot be made, and leaves no folder behind", async () => {
  const { ws, outside } = await tempLayout();
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { system: { run: ["bash"], read: ["."], write: ["."] } } }),
    `${outside}/p.json`,
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: _QUIET(),
    trusted: [{ path: `${ws}/later/plugins`, what: "a plugin directory" }],
  });
  try {
    const res = await registry.call("RunBashCode", {
      code: "mkdir -p later/plugins && echo x > later/plugins/evil.ts; ls later/plugins | wc -l",
    });
    assert.match(String(res.stdout), /^0$/m);
  } finally {
    await registry.close();
  }
  assert.deepEqual(await _gone([`${ws}/later`, `${ws}/.git`]), []);
});
