// Planted code (issues 20 and 27): a write grant never lets a tool leave behind
// a file that the user's own git, editor, shell or PATH runs or obeys outside the
// sandbox, at any depth, in repositories the tool makes itself too. What a tool
// writes stays in its sandbox's write layer until corral judges it; each attack
// below is followed by the real program (git status, commit, rebase --continue,
// reset --hard, a PATH lookup), and the canary it would make never appears.
import assert from "node:assert/strict";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

const _QUIET = () => new Reporter({ sink: () => {}, color: false });

async function _git(cwd: string, ...args: string[]) {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.name=User", "-c", "user.email=user@example.com", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
    // The user's own git: no sandbox, the host's environment.
    env: { GIT_CONFIG_NOSYSTEM: "1", GIT_EDITOR: "true", GIT_SEQUENCE_EDITOR: "true" },
  }).output();
  return {
    code: out.code,
    text: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
  };
}

/** A registry with the files and system toolsets writing `ws`. */
async function _registry(ws: string, outside: string, extra: Record<string, unknown> = {}) {
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: {
        files: { read: ["."], write: ["."] },
        system: { run: ["bash", "git"], read: ["."], write: ["."] },
      },
      tools: {
        DeleteFile: { confirm: "always" },
        CreateFile: { confirm: "always" },
        MoveFile: { confirm: "always" },
      },
      ...extra,
    }),
    `${outside}/policy.json`,
    ws,
  );
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
  return registry;
}

/** A git repository workspace with one commit, and a canary path outside. */
async function _repo(extra: Record<string, unknown> = {}) {
  const { ws, outside } = await tempLayout();
  assert.equal((await _git(ws, "init", "-q")).code, 0);
  await Deno.writeTextFile(`${ws}/a.txt`, "one\n");
  await _git(ws, "add", "a.txt");
  assert.equal((await _git(ws, "commit", "-q", "-m", "init")).code, 0);
  const registry = await _registry(ws, outside, extra);
  return { ws, outside, registry, canary: `${outside}/CANARY` };
}

async function _exists(p: string): Promise<boolean> {
  return await Deno.lstat(p).then(() => true, () => false);
}

/** The user's own git status and commit, outside any sandbox. */
async function _userGit(ws: string) {
  await _git(ws, "status");
  await Deno.writeTextFile(`${ws}/user.txt`, `${crypto.randomUUID()}\n`);
  await _git(ws, "add", "user.txt");
  return await _git(ws, "commit", "-q", "-m", "user's own commit");
}

/** Bash as jailed RunBashCode, git's identity set (the repository's config is the user's). */
function _bash(registry: Registry, code: string) {
  return registry.call("RunBashCode", {
    code: `export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t ` +
      `GIT_COMMITTER_EMAIL=t@t; ${code}`,
  });
}

Deno.test("jailed bash cannot plant code that the user's git status or git commit runs", async () => {
  const { ws, registry, canary } = await _repo();
  const config = await Deno.readTextFile(`${ws}/.git/config`);
  // The user's own hook (a secret scanner, say): no tool removes or rewrites it.
  await Deno.writeTextFile(`${ws}/.git/hooks/pre-commit`, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  const payload = `#!/bin/sh\ntouch ${canary}\n`;
  const attacks = [
    // hooks, made executable
    `mkdir -p .git/hooks; printf '${payload}' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`,
    `printf '${payload}' > .git/hooks/post-commit; chmod +x .git/hooks/post-commit`,
    `rm -rf .git/hooks; mkdir .git/hooks; printf '${payload}' > .git/hooks/pre-push; chmod +x .git/hooks/pre-push`,
    // config: fsmonitor, hooksPath, through git itself and by hand
    `git config core.fsmonitor 'touch ${canary}; false'`,
    `printf '[core]\\n\\tfsmonitor = touch ${canary}\\n' >> .git/config`,
    `mkdir -p evil && printf '${payload}' > evil/pre-commit && chmod +x evil/pre-commit && ` +
    `git config core.hooksPath evil`,
    `printf '[core]\\n\\thooksPath = evil\\n' > .git/config.worktree`,
    `git config include.path ../evil/inc && printf '[core]\\n\\tfsmonitor = touch ${canary}\\n' > evil/inc`,
    // a common dir of the tool's own, with its config
    `git init -q other && printf '[core]\\n\\tfsmonitor = touch ${canary}\\n' >> other/.git/config && ` +
    `echo ../other/.git > .git/commondir`,
    // links in place of git's own files
    `rm -rf .git/hooks && ln -sfn ../evil .git/hooks`,
    // gitmodules and modules
    `printf '[submodule "x"]\\n\\tpath = x\\n\\turl = ../x\\n' > .gitmodules; mkdir -p .git/modules/x`,
  ];
  try {
    for (const code of attacks) {
      const res = await _bash(registry, code);
      assert.equal(res.success, false, `${code}: nothing refused: ${JSON.stringify(res)}`);
      assert.match(String(res.error), /Cannot apply the changes of tool "RunBashCode"/, code);
    }
    // Through the files tools alone: refused by name before anything is written.
    const files: Array<[string, Record<string, unknown>]> = [
      ["CreateFile", { filepath: ".git/hooks/pre-commit", content: payload }],
      ["ReplaceTextInFile", {
        filepath: ".git/config",
        search: "[core]",
        replace: `[core]\n\tfsmonitor = touch ${canary}; false\n\thooksPath = evil`,
      }],
      ["CreateFile", { filepath: ".git/commondir", content: "../other/.git\n", overwrite: true }],
      ["MoveFile", { source: ".git", destination: "moved" }],
      ["MoveFile", { source: "a.txt", destination: ".git/config", overwrite: true }],
      ["DeleteFile", { filepath: ".git/config" }],
    ];
    for (const [tool, args] of files) {
      const res = await registry.call(tool, args);
      assert.equal(res.success, false, `${tool} ${JSON.stringify(args)} was let through`);
      assert.match(String(res.error), /is protected: ".+" holds what other programs run/);
    }
  } finally {
    await registry.close();
  }
  assert.equal(await Deno.readTextFile(`${ws}/.git/config`), config, ".git/config changed");
  for (const p of [".git/commondir", ".git/config.worktree", ".gitmodules", ".git/modules"]) {
    assert.equal(await _exists(`${ws}/${p}`), false, `${p} was made`);
  }
  assert.ok((await Deno.lstat(`${ws}/.git/hooks`)).isDirectory, "hooks replaced");
  assert.equal(await Deno.readTextFile(`${ws}/.git/hooks/pre-commit`), "#!/bin/sh\nexit 0\n");
  for (const h of ["post-commit", "pre-push"]) {
    assert.equal(await _exists(`${ws}/.git/hooks/${h}`), false, `${h} was planted`);
  }
  const user = await _userGit(ws);
  assert.equal(user.code, 0, user.text);
  assert.equal(await _exists(canary), false, "planted code ran in the user's git");
});

Deno.test("ordinary git work in the sandbox reaches the user's repository", async () => {
  const { ws, registry } = await _repo();
  try {
    const commit = await _bash(
      registry,
      "echo two >> a.txt && git add a.txt && git commit -q -m 'from the sandbox' && " +
        "git branch topic && git log --oneline | head -1",
    );
    assert.equal(commit.success, true, JSON.stringify(commit));
    assert.match(String(commit.stdout), /from the sandbox/);
  } finally {
    await registry.close();
  }
  assert.match((await _git(ws, "log", "--format=%s")).text, /^from the sandbox\ninit/);
  assert.match((await _git(ws, "branch", "--list")).text, /topic/);
  assert.equal((await _git(ws, "status", "--porcelain")).text, "");
  const user = await _userGit(ws);
  assert.equal(user.code, 0, user.text);
});

Deno.test("editor, agent, shell and tool settings are never applied, at any depth", async () => {
  const { ws, registry, canary } = await _repo();
  const names = [
    ".envrc",
    ".vscode/tasks.json",
    ".bashrc",
    ".mcp.json",
    ".claude/settings.json",
    "mise.toml",
    ".npmrc",
    ".idea/workspace.xml",
  ];
  try {
    for (const n of names) {
      for (const at of [n, `sub/dir/${n}`]) {
        const res = await _bash(
          registry,
          `mkdir -p "$(dirname ${at})"; echo 'touch ${canary}' > ${at}`,
        );
        assert.equal(res.success, false, at);
        assert.match(String(res.error), /protected: ".+" holds what other programs run/, at);
      }
      const created = await registry.call("CreateFile", { filepath: `deep/${n}`, content: "x" });
      assert.equal(created.success, false, n);
      assert.match(String(created.error), /is protected/);
    }
  } finally {
    await registry.close();
  }
  for (const n of names) {
    for (const at of [n, `sub/dir/${n}`, `deep/${n}`]) {
      assert.equal(await _exists(`${ws}/${at}`), false, `${at} reached the tree`);
    }
  }
  // Only ordinary folders made on the way are there; the user's status shows nothing else.
  const status = (await _git(ws, "status", "--porcelain", "--untracked-files=all")).text;
  assert.equal(status, "", status);
});

Deno.test("a repository the tool makes is applied without its hooks or unsafe config; a gitlink with fsmonitor runs nothing", async () => {
  const { ws, registry, canary } = await _repo();
  try {
    const res = await _bash(
      registry,
      [
        "git init -q vendor/lib && cd vendor/lib && echo x > f && git add f && git commit -q -m lib",
        `printf '#!/bin/sh\\ntouch ${canary}\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout`,
        `git config core.fsmonitor 'touch ${canary}; false'`,
        "cd ../.. && git add vendor/lib && git commit -q -m 'add lib as a gitlink'",
      ].join(" && "),
    );
    assert.equal(res.success, false, JSON.stringify(res));
    assert.match(String(res.error), /core\.fsmonitor/);
    assert.match(String(res.error), /\.git\/hooks/);
  } finally {
    await registry.close();
  }
  // The repository itself is there, usable, without the hook and the fsmonitor.
  assert.equal(await _exists(`${ws}/vendor/lib/.git/hooks/post-checkout`), false);
  const libConfig = await Deno.readTextFile(`${ws}/vendor/lib/.git/config`).catch(() => "");
  assert.doesNotMatch(libConfig, /fsmonitor/);
  await _git(`${ws}/vendor/lib`, "status");
  await _git(`${ws}/vendor/lib`, "checkout", "-q", "HEAD~0");
  // The user's own git in the outer repository looks into the gitlink: nothing runs.
  await _git(ws, "status");
  await _git(ws, "diff", "--stat");
  const user = await _userGit(ws);
  assert.equal(user.code, 0, user.text);
  assert.equal(await _exists(canary), false, "the nested repository's planted code ran");
});

Deno.test("a rebase's todo list and a moved branch never make the user's git run or write planted code", async () => {
  const { ws, registry, canary } = await _repo();
  await Deno.writeTextFile(`${ws}/b.txt`, "b\n");
  await _git(ws, "add", "b.txt");
  await _git(ws, "commit", "-q", "-m", "second");
  // The user stops in an interactive rebase (edit the last commit).
  const stop = await new Deno.Command("git", {
    args: ["-c", "user.name=U", "-c", "user.email=u@e", "rebase", "-i", "HEAD~1"],
    cwd: ws,
    env: { GIT_CONFIG_NOSYSTEM: "1", GIT_SEQUENCE_EDITOR: "sed -i s/^pick/edit/" },
    stdout: "null",
    stderr: "null",
  }).output();
  assert.ok(stop.success || await _exists(`${ws}/.git/rebase-merge`), "no rebase in progress");
  try {
    const todo = await _bash(
      registry,
      `echo 'exec touch ${canary}' >> .git/rebase-merge/git-rebase-todo; ` +
        `echo 'exec touch ${canary}' > .git/rebase-merge/done`,
    );
    assert.equal(todo.success, false, JSON.stringify(todo));
    assert.match(String(todo.error), /rebase-merge/);
    // A branch moved to a commit that holds .envrc and a husky-style hook; an index staging them.
    const move = await _bash(
      registry,
      `git rebase --abort 2>/dev/null; printf 'touch ${canary}\\n' > .envrc && ` +
        `git add -f .envrc && git commit -q -m evil && git reset -q --soft HEAD`,
    );
    assert.equal(move.success, false, JSON.stringify(move));
    assert.match(String(move.error), /\.envrc/);
  } finally {
    await registry.close();
  }
  const cont = await _git(ws, "rebase", "--continue");
  assert.equal(cont.code, 0, cont.text);
  await _git(ws, "reset", "-q", "--hard");
  await _git(ws, "checkout", "-q", ".");
  await _git(ws, "stash");
  assert.equal(await _exists(`${ws}/.envrc`), false, ".envrc was written out");
  assert.equal(await _exists(canary), false, "a planted exec line or hook ran");
  assert.match((await _git(ws, "log", "--format=%s")).text, /^second\ninit/);
});

Deno.test("nothing is applied in a folder on the user's PATH: a PATH lookup finds the real program", async () => {
  const { ws, outside } = await tempLayout();
  const canary = `${outside}/CANARY`;
  await Deno.mkdir(`${ws}/bin`);
  const path = `${ws}/bin:/usr/local/bin:/usr/bin:/bin`;
  const policy = `${outside}/policy.json`;
  await Deno.writeTextFile(
    policy,
    JSON.stringify({ toolsets: { system: { run: ["bash"], read: ["."], write: ["."] } } }),
  );
  // corral run by a user whose PATH holds a folder of the workspace (given to the child: test
  // files share this process's environment, so it is never set here).
  const code =
    `for p in git ls python3; do printf '#!/bin/sh\\ntouch ${canary}\\n' > bin/$p; chmod +x bin/$p; done`;
  const res = await runCli(
    ["call", "RunBashCode", "--yes", "--permissions", policy, "--args", JSON.stringify({ code })],
    { cwd: ws, env: { PATH: path } },
  );
  assert.notEqual(res.code, 0, res.stdout + res.stderr);
  assert.match(res.stdout + res.stderr, /a folder on the user's PATH/);
  assert.deepEqual([...Deno.readDirSync(`${ws}/bin`)], []);
  const which = await new Deno.Command("sh", {
    args: ["-c", "command -v git; git --version >/dev/null; ls >/dev/null"],
    env: { PATH: path },
    stdout: "piped",
  }).output();
  assert.doesNotMatch(new TextDecoder().decode(which.stdout), new RegExp(`${ws}/bin`));
  assert.equal(await _exists(canary), false);
});

Deno.test("unprotect lifts exactly one entry, and the banner says so", async () => {
  const { ws, registry } = await _repo({ unprotect: [".vscode/"] });
  try {
    const ok = await registry.call("CreateFile", { filepath: ".vscode/tasks.json", content: "{}" });
    assert.equal(ok.success, true, JSON.stringify(ok));
    const no = await registry.call("CreateFile", { filepath: ".idea/x.xml", content: "x" });
    assert.equal(no.success, false);
    const bash = await registry.call("RunBashCode", {
      code: "echo 1 > .vscode/b.json && echo 1 > .envrc && echo wrote",
    });
    assert.equal(bash.success, false, JSON.stringify(bash));
    assert.match(String(bash.error), /\.envrc: protected/);
    assert.doesNotMatch(String(bash.error), /\.vscode/);
  } finally {
    await registry.close();
  }
  assert.equal(await Deno.readTextFile(`${ws}/.vscode/b.json`), "1\n");
  assert.equal(await _exists(`${ws}/.envrc`), false);
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

Deno.test("a missing trust-base path inside a write grant is never made in the tree", async () => {
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
      code: "mkdir -p later/plugins && echo x > later/plugins/evil.ts && echo ok > fine.txt",
    });
    assert.equal(res.success, false, JSON.stringify(res));
    assert.match(String(res.error), /trust base \(a plugin directory\)/);
  } finally {
    await registry.close();
  }
  assert.equal(await _exists(`${ws}/later/plugins`), false);
  assert.equal(await Deno.readTextFile(`${ws}/fine.txt`), "ok\n");
});
