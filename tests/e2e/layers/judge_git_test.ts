// The judge reads the tree as git will (issue 37, classes 1, 2 and 5): a link at or to a
// protected place, a hooks folder named by a nested repository's or the user's own config, and
// a git directory under another name than `.git`. Each attack is followed by the user's own git
// outside any sandbox; the canary the planted code would make never appears. Each test has a
// control: the same planted bytes, made by hand, do run in the user's git.
import assert from "node:assert/strict";
import { runCli } from "../../_helpers.ts";
import { bash, bashRegistry, exists, judgeLayout, sh, userGit } from "../../_judge_helpers.ts";

Deno.test("class 1: a link at a protected place, or leading to one, is refused; git status runs nothing", async () => {
  const { ws, outside, canary } = await judgeLayout();
  const config = await Deno.readTextFile(`${ws}/.git/config`);
  const evil = `[core]\\n\\tfsmonitor = touch ${canary}; false\\n`;
  const registry = await bashRegistry(ws, outside);
  const attacks: Array<[string, RegExp]> = [
    [`printf '${evil}' > evil.cfg && ln -sf ../evil.cfg .git/config`, /\.git\/config: a link/],
    [`ln -sf ../evil.cfg .git/config.worktree`, /config\.worktree: a link/],
    // In a repository the tool makes itself.
    [
      `git init -q made && printf '${evil}' > made.cfg && ln -sf ../../made.cfg made/.git/config`,
      /made\/\.git\/config: a link/,
    ],
    // Leading to a protected place, also through a link on the way.
    [`ln -s .git g && ln -s g/hooks/pre-commit pc`, /pc: it leads to \.git\/hooks\/pre-commit/],
    [`ln -s sub/.envrc env-link`, /env-link: it leads to sub\/\.envrc/],
    [`ln -s .git/config cfg-link`, /cfg-link: it leads to \.git\/config/],
  ];
  try {
    for (const [code, why] of attacks) {
      const res = await bash(registry, code);
      assert.equal(res.success, false, `${code}: nothing refused: ${JSON.stringify(res)}`);
      assert.match(String(res.error), why, code);
    }
    // Control: an ordinary link is applied.
    const ok = await bash(registry, "ln -s a.txt ok-link && echo x > ok.txt");
    assert.equal(ok.success, true, JSON.stringify(ok));
  } finally {
    await registry.close();
  }
  assert.equal(await Deno.readLink(`${ws}/ok-link`), "a.txt");
  assert.ok((await Deno.lstat(`${ws}/.git/config`)).isFile, ".git/config is a link");
  assert.equal(await Deno.readTextFile(`${ws}/.git/config`), config);
  for (const p of [".git/config.worktree", "g", "pc", "env-link", "cfg-link"]) {
    assert.equal(await exists(`${ws}/${p}`), false, `${p} reached the tree`);
  }
  assert.equal((await Deno.lstat(`${ws}/made/.git/HEAD`)).isFile, true, "the repository was made");
  assert.equal(await exists(`${ws}/made/.git/config`), false);
  // The user's own git, outside: status and commit in both repositories.
  await userGit(`${ws}/made`, ["status"]);
  await userGit(ws, ["status"]);
  await Deno.writeTextFile(`${ws}/user.txt`, "u\n");
  await userGit(ws, ["add", "user.txt"]);
  assert.equal((await userGit(ws, ["commit", "-q", "-m", "user"])).code, 0);
  assert.equal(await exists(canary), false, "planted config ran in the user's git");
  // Control: the link the tool made, made by hand, does run the canary in the user's git.
  await sh(ws, `ln -sf ../evil.cfg .git/config && git status >/dev/null 2>&1; true`);
  assert.equal(await exists(canary), true, "the control's link ran nothing: the set-up is wrong");
});

Deno.test("class 2: a nested repository's core.hooksPath (husky) is a hooks folder", async () => {
  const { ws, outside, canary } = await judgeLayout();
  const web = `${ws}/apps/web`;
  await Deno.mkdir(`${web}/.husky/_`, { recursive: true });
  assert.equal((await userGit(web, ["init", "-q"])).code, 0);
  assert.equal((await userGit(web, ["config", "core.hooksPath", ".husky/_"])).code, 0);
  // The user's own hook there: proves git runs hooks from this folder (the control).
  const mark = `${outside}/USER_HOOK_RAN`;
  await Deno.writeTextFile(`${web}/.husky/_/pre-commit`, `#!/bin/sh\ntouch ${mark}\n`, {
    mode: 0o755,
  });
  const registry = await bashRegistry(ws, outside);
  const hook = `#!/bin/sh\\ntouch ${canary}\\n`;
  try {
    for (const at of [".husky/_/pre-commit", ".husky/_/post-commit", ".husky/pre-commit"]) {
      const res = await bash(
        registry,
        `printf '${hook}' > apps/web/${at} && chmod +x apps/web/${at}`,
      );
      assert.equal(res.success, false, `${at}: ${JSON.stringify(res)}`);
      assert.match(String(res.error), /git runs the hooks in .*core\.hooksPath/, at);
    }
    const ok = await bash(registry, "echo 'x' > apps/web/index.ts");
    assert.equal(ok.success, true, JSON.stringify(ok));
  } finally {
    await registry.close();
  }
  assert.equal(await Deno.readTextFile(`${web}/index.ts`), "x\n");
  await userGit(web, ["add", "index.ts"]);
  const commit = await userGit(web, ["commit", "-q", "-m", "user"]);
  assert.equal(commit.code, 0, commit.text);
  assert.equal(await exists(mark), true, "the user's own hook did not run: the set-up is wrong");
  assert.equal(await exists(canary), false, "a planted hook ran in the user's commit");
});

Deno.test("class 2: the user's global config (an include, a relative core.hooksPath) names each repository's hooks folder", async () => {
  const { base, ws, outside, canary } = await judgeLayout();
  const home = `${base}/home`;
  await Deno.mkdir(home);
  await Deno.writeTextFile(`${home}/.gitconfig`, "[include]\n\tpath = hooks.inc\n");
  await Deno.writeTextFile(`${home}/hooks.inc`, "[core]\n\thooksPath = .githooks\n");
  const policy = `${outside}/policy.json`;
  await Deno.writeTextFile(
    policy,
    JSON.stringify({ toolsets: { system: { run: ["bash", "git"], read: ["."], write: ["."] } } }),
  );
  const hook = `#!/bin/sh\\ntouch ${canary}\\n`;
  const call = (code: string) =>
    runCli([
      "call",
      "RunBashCode",
      "--yes",
      "--permissions",
      policy,
      "--args",
      JSON.stringify({ code }),
    ], {
      cwd: ws,
      env: {
        HOME: home,
        DENO_DIR: Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME")}/.cache/deno`,
        CORRAL_LAYERS_DIR: `${outside}/layers`,
      },
    });
  const res = await call(
    `mkdir -p .githooks && printf '${hook}' > .githooks/pre-commit && chmod +x .githooks/pre-commit; ` +
      `git init -q sub && mkdir sub/.githooks && printf '${hook}' > sub/.githooks/pre-commit && ` +
      `chmod +x sub/.githooks/pre-commit`,
  );
  assert.notEqual(res.code, 0, res.stdout + res.stderr);
  assert.match(res.stdout, /\.githooks\/pre-commit: git runs the hooks in/);
  assert.match(res.stdout, /sub\/\.githooks\/pre-commit: git runs the hooks in/);
  const ok = await call("echo x > plain.txt");
  assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  assert.equal(await Deno.readTextFile(`${ws}/plain.txt`), "x\n");
  assert.equal(await exists(`${ws}/.githooks/pre-commit`), false);
  assert.equal(await exists(`${ws}/sub/.githooks/pre-commit`), false);
  // The user's own git with that HOME, outside: nothing planted runs.
  const env = { HOME: home };
  await userGit(ws, ["add", "plain.txt"], env);
  assert.equal((await userGit(ws, ["commit", "-q", "-m", "user"], env)).code, 0);
  assert.equal(
    (await userGit(`${ws}/sub`, ["commit", "-q", "--allow-empty", "-m", "u"], env)).code,
    0,
  );
  assert.equal(await exists(canary), false, "a planted hook ran in the user's commit");
  // Control: a hook the user puts there runs with that HOME.
  const mark = `${outside}/USER_HOOK_RAN`;
  await Deno.mkdir(`${ws}/.githooks`, { recursive: true });
  await Deno.writeTextFile(`${ws}/.githooks/pre-commit`, `#!/bin/sh\ntouch ${mark}\n`, {
    mode: 0o755,
  });
  await userGit(ws, ["commit", "-q", "--allow-empty", "-m", "again"], env);
  assert.equal(await exists(mark), true, "git did not run .githooks: the set-up is wrong");
});

Deno.test("class 5: a git directory under another name (a bare repository) is judged as .git is", async () => {
  const { ws, outside, canary } = await judgeLayout();
  const registry = await bashRegistry(ws, outside);
  const made = (dir: string) =>
    `git init -q --bare ${dir} && git --git-dir=${dir} config core.worktree .. && ` +
    `git --git-dir=${dir} config core.bare false && git --git-dir=${dir} --work-tree=. add a.txt && ` +
    `git --git-dir=${dir} config core.fsmonitor 'touch ${canary}; false'`;
  try {
    const one = await bash(registry, made("src"));
    assert.equal(one.success, false, JSON.stringify(one));
    assert.match(
      String(one.error),
      /src\/config: its git config change sets keys .*core\.fsmonitor/,
    );
    // In two calls: a config file first (no repository yet), then HEAD, objects and refs.
    const first = await bash(
      registry,
      `mkdir -p lib && printf '[core]\\n\\tworktree = ..\\n\\tbare = false\\n\\tfsmonitor = touch ${canary}; false\\n' > lib/config`,
    );
    assert.equal(first.success, true, JSON.stringify(first));
    const second = await bash(
      registry,
      "mkdir -p lib/objects lib/refs/heads && echo 'ref: refs/heads/main' > lib/HEAD && " +
        "GIT_DIR=lib GIT_WORK_TREE=. git add a.txt 2>/dev/null; true",
    );
    assert.equal(second.success, false, JSON.stringify(second));
    assert.match(String(second.error), /it would make lib a git repository .*whose config/);
    // A hook in a bare repository of the user's.
    await userGit(ws, ["init", "-q", "--bare", "store.git"]);
    const hook = await bash(
      registry,
      `printf '#!/bin/sh\\ntouch ${canary}\\n' > store.git/hooks/post-update && chmod +x store.git/hooks/post-update`,
    );
    assert.equal(hook.success, false, JSON.stringify(hook));
    assert.match(String(hook.error), /store\.git\/hooks\/post-update: protected/);
  } finally {
    await registry.close();
  }
  assert.equal(await exists(`${ws}/lib/HEAD`), false);
  assert.equal(await exists(`${ws}/store.git/hooks/post-update`), false);
  // The user's own git in each folder, outside.
  for (const d of ["src", "lib", "store.git", "."]) await userGit(`${ws}/${d}`, ["status"]);
  await userGit(ws, ["push", "-q", "store.git", "HEAD:main"]);
  assert.equal(await exists(canary), false, "a bare repository's planted code ran");
  // Control: the same repository made by hand runs the canary in the user's git status.
  await sh(ws, made("control"));
  await userGit(`${ws}/control`, ["status"]);
  assert.equal(
    await exists(canary),
    true,
    "the control's git status ran nothing: the set-up is wrong",
  );
});
