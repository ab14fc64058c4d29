// A real third-party git MCP server hosted by corral, on a repository in the
// workspace, with real git: @cyanheads/git-mcp-server@2.15.3 from the npm
// registry (the issue names the PyPI `mcp-server-git`, but no PyPI index is
// reachable on these machines; this is the npm server nobody here wrote).
// It is installed ahead into .corral/servers (tests/fixtures/hosted/servers.json).
//
// Its least grant: read and write of the workspace, `run: ["git"]`, and
// `sys: ["hostname", "cpus"]` (Deno's --allow-sys names): at start its pino
// logger reads os.hostname() and a bundled OpenTelemetry package os.cpus(),
// and without them it exits with NotCapable. No net, no HOME of the host.
//
// Rule 2 of the sandbox issue: no file a tool writes is run or obeyed outside
// the sandbox. The server has no tool that sets git config (no `git_config`);
// the tools that write config or files (git_remote, git_worktree, git_init,
// git_clone, git_checkout, git_merge) attack here instead, and afterwards the
// user's own git runs outside corral.
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli } from "../../_helpers.ts";
import {
  approve,
  type HostedLayout,
  hostedLayout,
  hostedRegistry,
  SERVERS_DIR,
} from "../../_hosted_helpers.ts";
import type { Registry } from "../../../core/registry/registry.ts";

const GIT = "@cyanheads/git-mcp-server@2.15.3";
const AGENT = { name: "Hosted Agent", email: "agent@example.com" };
const SERVERS = {
  git: {
    npm: GIT,
    env: {
      // No signing key inside; quiet logs; the agent's identity (the repository's config is read-only).
      GIT_SIGN_COMMITS: "false",
      MCP_LOG_LEVEL: "error",
      GIT_AUTHOR_NAME: AGENT.name,
      GIT_AUTHOR_EMAIL: AGENT.email,
      GIT_COMMITTER_NAME: AGENT.name,
      GIT_COMMITTER_EMAIL: AGENT.email,
    },
  },
};
const PERMS = { git: { read: ["."], write: ["."], run: ["git"], sys: ["hostname", "cpus"] } };
const YES = { confirm: () => true };

/** The user's own git: outside any sandbox, the host's environment. */
async function _git(cwd: string, ...args: string[]): Promise<{ code: number; text: string }> {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.name=User", "-c", "user.email=user@example.com", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { GIT_CONFIG_NOSYSTEM: "1" },
  }).output();
  const d = new TextDecoder();
  return { code: out.code, text: d.decode(out.stdout) + d.decode(out.stderr) };
}

async function _ok(cwd: string, ...args: string[]): Promise<string> {
  const r = await _git(cwd, ...args);
  assert.equal(r.code, 0, `git ${args.join(" ")}: ${r.text}`);
  return r.text;
}

const _exists = (p: string) => Deno.lstat(p).then(() => true, () => false);

/** A repository in the workspace with one commit by the user, and one outside the grant. */
async function _repos(l: HostedLayout): Promise<void> {
  await _ok(l.ws, "init", "-q", "-b", "main");
  await Deno.writeTextFile(join(l.ws, "a.txt"), "one\n");
  await _ok(l.ws, "add", "a.txt");
  await _ok(l.ws, "commit", "-q", "-m", "init");
  await _ok(l.outside, "init", "-q", "-b", "main");
  await _ok(l.outside, "add", "canary.txt");
  await _ok(l.outside, "commit", "-q", "-m", "OUTSIDE-COMMIT");
}

/** Approve the server's tools once (what `corral servers install` does), then a fresh registry. */
async function _hosted(l: HostedLayout): Promise<Registry> {
  const first = await hostedRegistry(l, SERVERS, PERMS);
  try {
    const names = await approve(first.registry, "git");
    for (const t of ["git_status", "git_add", "git_commit", "git_log", "git_remote", "git_init"]) {
      assert.ok(names.includes(t), `${t} not among ${names.join(",")}`);
    }
    // No tool that sets config: the config attacks go through the tools that write it.
    assert.deepEqual(names.filter((n) => /config/i.test(n)), []);
  } finally {
    await first.registry.close();
  }
  return (await hostedRegistry(l, SERVERS, PERMS)).registry;
}

/** The config lines git obeys to run code or read elsewhere (not remotes, branches or core formatting). */
function _unsafeLines(text: string): string[] {
  return text.split("\n").map((l) => l.trim()).filter((l) =>
    /^(fsmonitor|hookspath|sshcommand|editor|pager|askpass|path|worktree|gitdir)\b/i.test(l)
  ).sort();
}

async function _unsafeConfig(ws: string): Promise<string[]> {
  return _unsafeLines(await Deno.readTextFile(join(ws, ".git", "config")));
}

Deno.test("git-mcp-server: status, add, commit and log on a workspace repository, as the host's git sees them", async () => {
  await using l = await hostedLayout();
  await _repos(l);
  await Deno.writeTextFile(join(l.ws, "b.txt"), "from the agent\n");
  const registry = await _hosted(l);
  try {
    const st = await registry.call("git_status", { path: l.ws, includeUntracked: true });
    assert.equal(st.success, true, JSON.stringify(st));
    assert.match(JSON.stringify(st.result), /b\.txt/);
    const add = await registry.call("git_add", { path: l.ws, paths: ["b.txt"] }, YES);
    assert.equal(add.success, true, JSON.stringify(add));
    assert.match(await _ok(l.ws, "diff", "--cached", "--name-only"), /^b\.txt$/m);
    const commit = await registry.call(
      "git_commit",
      { path: l.ws, message: "agent: add b.txt" },
      YES,
    );
    assert.equal(commit.success, true, JSON.stringify(commit));
    const log = await registry.call("git_log", { path: l.ws, maxCount: 5 });
    assert.equal(log.success, true, JSON.stringify(log));
    assert.match(JSON.stringify(log.result), /agent: add b\.txt[\s\S]*init/);
  } finally {
    await registry.close();
  }
  // The host's git sees the server's commit, by the agent, on top of the user's.
  assert.equal(
    await _ok(l.ws, "log", "--format=%s|%an|%ae"),
    `agent: add b.txt|${AGENT.name}|${AGENT.email}\ninit|User|user@example.com\n`,
  );
  assert.equal(await _ok(l.ws, "show", "HEAD:b.txt"), "from the agent\n");
  // Nothing left behind: close() returned after the server's placeholders were removed.
  assert.equal(await _ok(l.ws, "status", "--porcelain"), "");
  assert.equal(await _ok(l.ws, "fsck", "--no-progress"), "");
});

Deno.test("git-mcp-server: a repository outside the grant is out of its reach", async () => {
  await using l = await hostedLayout();
  await _repos(l);
  const registry = await _hosted(l);
  try {
    // The server itself would go anywhere (no GIT_BASE_DIR): only corral's sandbox stops it.
    const tries: Array<[string, Record<string, unknown>]> = [
      ["git_status", { path: l.outside }],
      ["git_log", { path: l.outside }],
      ["git_show", { path: l.outside, object: "HEAD:canary.txt" }],
      ["git_clone", { url: l.outside, path: join(l.ws, "stolen") }],
      ["git_clone", { url: `file://${l.outside}`, path: join(l.ws, "stolen2") }],
      ["git_set_working_dir", { path: l.outside }],
    ];
    for (const [tool, args] of tries) {
      const r = await registry.call(tool, args, YES);
      assert.equal(r.success, false, `${tool} ${JSON.stringify(args)}: ${JSON.stringify(r)}`);
      assert.doesNotMatch(JSON.stringify(r), /CANARY-SECRET|OUTSIDE-COMMIT/);
    }
    for (const d of ["stolen", "stolen2"]) {
      assert.equal(await _exists(join(l.ws, d, "canary.txt")), false, d);
    }
    // The host still answers, inside.
    assert.equal((await registry.call("git_status", { path: l.ws })).success, true);
  } finally {
    await registry.close();
  }
  assert.equal(await Deno.readTextFile(join(l.outside, "canary.txt")), "CANARY-SECRET\n");
});

/** Files on the attacker's branch: each would run `touch canary` in the user's tools. */
function _attackFiles(canary: string): Record<string, string> {
  return {
    ".husky/pre-commit": `#!/bin/sh\ntouch ${canary}\n`,
    ".envrc": `touch ${canary}\n`,
    ".gitmodules": `[submodule "x"]\n\tpath = x\n\turl = ../x\n\tupdate = !touch ${canary}\n`,
    ".vscode/tasks.json": `{"tasks":[{"label":"x","command":"touch ${canary}",` +
      `"runOptions":{"runOn":"folderOpen"}}]}\n`,
  };
}

/**
 * The user's repository uses husky (`core.hooksPath = .husky`, a harmless
 * pre-commit), and holds an attacker's branch `pr` (a fetched pull request)
 * that rewrites the hook and adds files other programs obey.
 */
async function _huskyRepo(l: HostedLayout, canary: string, hook: string): Promise<void> {
  await _repos(l);
  await Deno.mkdir(join(l.ws, ".husky"));
  await Deno.writeTextFile(join(l.ws, ".husky", "pre-commit"), hook);
  await Deno.chmod(join(l.ws, ".husky", "pre-commit"), 0o755);
  await _ok(l.ws, "config", "core.hooksPath", ".husky");
  await _ok(l.ws, "add", ".husky");
  await _ok(l.ws, "commit", "-q", "-m", "husky");
  await _ok(l.ws, "checkout", "-q", "-b", "pr");
  for (const [path, text] of Object.entries(_attackFiles(canary))) {
    await Deno.mkdir(join(l.ws, path, ".."), { recursive: true });
    await Deno.writeTextFile(join(l.ws, path), text);
  }
  await _ok(l.ws, "add", ".");
  await _ok(l.ws, "commit", "-q", "--no-verify", "-m", "pr: innocent change");
  await _ok(l.ws, "checkout", "-q", "main");
  for (const f of [".envrc", ".gitmodules", ".vscode"]) {
    assert.equal(await _exists(join(l.ws, f)), false, f);
  }
}

Deno.test("git-mcp-server: its tools cannot plant a hook, config or file that the user's git runs or obeys", async () => {
  await using l = await hostedLayout();
  const canary = join(l.outside, "CANARY");
  // The user's own hook leaves a mark outside the workspace: it shows git ran .husky/pre-commit.
  const ran = join(l.base, "HOOK-RAN");
  const hook = `#!/bin/sh\ntouch ${ran}\n`;
  await _huskyRepo(l, canary, hook);
  const configBefore = await Deno.readTextFile(join(l.ws, ".git", "config"));
  const registry = await _hosted(l);
  const ws = l.ws;
  // Each attempt, and what stops it: "fail" corral refuses what it wrote when its layer is
  // applied (or git itself fails), "any" git may succeed (what it changes is harmless: a remote
  // with a plain URL, a tracking branch, refs that bring no protected file).
  const attacks: Array<[string, Record<string, unknown>, "fail" | "any"]> = [
    // Config: a remote, a tracking branch, a linked worktree (its own config), a new init.
    [
      "git_remote",
      { path: ws, mode: "add", name: "evil", url: "https://example.com/e.git" },
      "any",
    ],
    ["git_checkout", { path: ws, target: "tracked", createBranch: true, track: true }, "any"],
    ["git_worktree", { path: ws, mode: "add", worktreePath: join(ws, "wt"), branch: "b" }, "fail"],
    ["git_init", { path: ws }, "any"],
    // Hooks: a repository or a clone made where git looks for hooks and modules.
    ["git_init", { path: join(ws, ".git", "hooks") }, "fail"],
    ["git_init", { path: join(ws, ".git", "modules", "x"), bare: true }, "fail"],
    ["git_clone", { url: ws, path: join(ws, ".git", "hooks", "c") }, "fail"],
    // The attacker's files through git itself: the rewritten hook, .envrc, .gitmodules, .vscode.
    ["git_checkout", { path: ws, target: "pr", paths: Object.keys(_attackFiles(canary)) }, "fail"],
    ["git_merge", { path: ws, branch: "pr" }, "fail"],
    ["git_cherry_pick", { path: ws, commits: ["pr"] }, "fail"],
    ["git_reset", { path: ws, mode: "hard", target: "pr", confirmed: true }, "fail"],
    ["git_checkout", { path: ws, target: "pr", force: true }, "fail"],
  ];
  const results: string[] = [];
  try {
    for (const [tool, args, expect] of attacks) {
      const r = await registry.call(tool, args, YES);
      const line = `${tool} ${JSON.stringify(args)} -> ${r.success} ${String(r.error ?? "")}`;
      results.push(line);
      if (expect === "fail") assert.equal(r.success, false, line);
    }
    // The server still works for ordinary git after the attacks.
    const st = await registry.call("git_status", { path: ws });
    assert.equal(st.success, true, JSON.stringify(st));
  } finally {
    await registry.close();
  }
  const why = results.join("\n");
  // The repository's config holds the user's keys as they were; at most a remote and a branch more.
  assert.deepEqual(
    await _unsafeConfig(ws),
    _unsafeLines(configBefore),
    `a key git obeys to run code changed\n${why}`,
  );
  // The hook git runs is the user's; nothing new where git looks for hooks, modules, worktrees.
  assert.equal(await Deno.readTextFile(join(ws, ".husky", "pre-commit")), hook, why);
  const hooks = (await Array.fromAsync(Deno.readDir(join(ws, ".git", "hooks")))).map((e) => e.name);
  assert.deepEqual(hooks.filter((n) => !n.endsWith(".sample")), [], why);
  for (
    const p of [".git/modules", ".git/worktrees", "wt/.git", ".envrc", ".gitmodules", ".vscode"]
  ) {
    assert.equal(await _exists(join(ws, p)), false, `${p} left behind\n${why}`);
  }
  // The user's own git, outside corral, as the attempts left the repository: status, a commit
  // (git runs the user's pre-commit hook), the log.
  await Deno.remove(ran);
  await _ok(ws, "status");
  await Deno.writeTextFile(join(ws, "user.txt"), "mine\n");
  await _ok(ws, "add", "user.txt");
  await _ok(ws, "commit", "-q", "-m", "user's own commit");
  assert.match(await _ok(ws, "log", "--format=%s", "-1"), /user's own commit/);
  assert.equal(await _exists(ran), true, "the user's own hook did not run");
  assert.equal(await _exists(canary), false, `planted code ran in the user's git\n${why}`);
});

Deno.test("git-mcp-server: a repository it makes deeper is applied with a safe config; worktrees and hooks never", async () => {
  await using l = await hostedLayout();
  await _repos(l);
  const sub = join(l.ws, "vendor", "lib");
  const url = "https://example.com/lib.git";
  let registry = await _hosted(l);
  try {
    const init = await registry.call("git_init", { path: sub, initialBranch: "main" }, YES);
    assert.equal(init.success, true, JSON.stringify(init));
    const r = await registry.call(
      "git_remote",
      { path: sub, mode: "add", name: "first", url },
      YES,
    );
    assert.equal(r.success, true, JSON.stringify(r));
  } finally {
    await registry.close();
  }
  // git made only its sample hooks, none of which git runs.
  const hooks = (await Array.fromAsync(Deno.readDir(join(sub, ".git", "hooks")))).map((e) =>
    e.name
  );
  assert.deepEqual(hooks.filter((n) => !n.endsWith(".sample")), []);
  assert.match(await Deno.readTextFile(join(sub, ".git", "config")), /\[remote "first"\]/);
  registry = (await hostedRegistry(l, SERVERS, PERMS)).registry;
  try {
    // A second remote is a harmless change: applied. A linked worktree never is.
    const again = await registry.call("git_remote", {
      path: sub,
      mode: "add",
      name: "second",
      url,
    }, YES);
    assert.equal(again.success, true, JSON.stringify(again));
    const wt = await registry.call("git_worktree", {
      path: sub,
      mode: "add",
      worktreePath: join(l.ws, "wt"),
      branch: "w",
    }, YES);
    assert.equal(wt.success, false, JSON.stringify(wt));
  } finally {
    await registry.close();
  }
  assert.match(await Deno.readTextFile(join(sub, ".git", "config")), /\[remote "second"\]/);
  assert.equal(await _exists(join(sub, ".git", "worktrees")), false);
  assert.equal(await _exists(join(l.ws, "wt", ".git")), false);
  // The user's own git in both repositories, outside corral.
  await Deno.writeTextFile(join(sub, "f.txt"), "x\n");
  await _ok(sub, "add", "f.txt");
  await _ok(sub, "commit", "-q", "-m", "user in the nested repository");
  await _ok(l.ws, "status");
  assert.match(await _ok(sub, "log", "--format=%s"), /^user in the nested repository\n$/);
});

Deno.test("corral servers install and corral call leave nothing in the user's repository", async () => {
  // Until the fix, both returned (and the CLI exited) before the server's sandbox was released:
  // its placeholders (.bashrc, .envrc, corral.json, ...) stayed in the workspace for good.
  await using l = await hostedLayout();
  await _repos(l);
  await Deno.writeTextFile(join(l.config, "corral.json"), JSON.stringify({ servers: SERVERS }));
  await Deno.writeTextFile(
    join(l.config, "permissions.json"),
    JSON.stringify({ servers: PERMS }),
  );
  const env = { CORRAL_CONFIG_DIR: l.config, CORRAL_SERVERS_DIR: SERVERS_DIR };
  const install = await runCli(["servers", "install", "git"], { cwd: l.ws, env });
  assert.equal(install.code, 0, install.stderr);
  assert.equal(await _ok(l.ws, "status", "--porcelain"), "");
  await Deno.writeTextFile(join(l.ws, "new.txt"), "x\n");
  const call = await runCli(
    ["call", "git_status", "--args", JSON.stringify({ path: l.ws, includeUntracked: true })],
    { cwd: l.ws, env },
  );
  assert.equal(call.code, 0, call.stderr);
  assert.match(call.stdout, /new\.txt/);
  assert.equal(await _ok(l.ws, "status", "--porcelain"), "?? new.txt\n");
});

Deno.test("git-mcp-server: without its sys names it does not start, and says what it asked", async () => {
  await using l = await hostedLayout();
  const { sys: _, ...noSys } = PERMS.git;
  const { registry, lines } = await hostedRegistry(l, SERVERS, { git: noSys });
  try {
    await assert.rejects(
      approve(registry, "git"),
      /server "git" will not start: exited \(code 1\)/,
    );
    // Its own words, on stderr: Deno refused the first of them.
    assert.match(lines.join("\n"), /NotCapable: Requires sys access to "hostname"/);
  } finally {
    await registry.close();
  }
});
