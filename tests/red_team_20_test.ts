// Red team for issue 20: variants of its seven classes, tried as an outsider
// would with ordinary tool calls (jailed bash, the files tools) against real
// bwrap, real git and real sandboxes. Each test tries the forbidden thing and
// checks that it did not happen.
import assert from "node:assert/strict";
import { parsePolicy } from "../core/config/policy.ts";
import { Registry } from "../core/registry/registry.ts";
import { Reporter } from "../core/tool/reporter.ts";
import { runCli, tempLayout } from "./_helpers.ts";

async function _git(cwd: string, ...args: string[]) {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.name=User", "-c", "user.email=user@example.com", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { GIT_CONFIG_NOSYSTEM: "1" }, // the user's own git, outside any sandbox
  }).output();
  return { code: out.code, text: new TextDecoder().decode(out.stderr) };
}

async function _bashRegistry(ws: string, outside: string): Promise<Registry> {
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { system: { run: ["bash"], read: ["."], write: ["."] } } }),
    `${outside}/policy.json`,
    ws,
  );
  return await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
}

/** One sandbox start: run `code` in jailed bash, then end the sandbox. */
async function _bash(ws: string, outside: string, code: string) {
  const registry = await _bashRegistry(ws, outside);
  try {
    // A start refused at discovery leaves the tool unloaded, with the reason.
    if (registry.get("RunBashCode")?.status !== "loaded") {
      return { success: false, error: JSON.stringify(registry.problems) };
    }
    return await registry.call("RunBashCode", { code });
  } finally {
    await registry.close();
  }
}

async function _exists(p: string): Promise<boolean> {
  return await Deno.lstat(p).then(() => true, () => false);
}

// Class 2 (planted code): the scan that finds nested repositories stopped after
// 5000 folder entries, so a tool could make 5000 files first and, at the next
// start, rewrite a nested repository's config; the user's `git status` there ran it.
Deno.test("red team 20: a flood of files or folders never blinds the scan for nested repositories", async () => {
  const { ws, outside } = await tempLayout();
  const canary = `${outside}/CANARY`;
  assert.equal((await _git(ws, "init", "-q")).code, 0);
  await Deno.mkdir(`${ws}/sub`);
  assert.equal((await _git(`${ws}/sub`, "init", "-q")).code, 0);
  await Deno.writeTextFile(`${ws}/sub/a.txt`, "a\n");
  await _git(`${ws}/sub`, "add", "a.txt");
  assert.equal((await _git(`${ws}/sub`, "commit", "-q", "-m", "init")).code, 0);
  const config = await Deno.readTextFile(`${ws}/sub/.git/config`);
  const plant =
    `printf '[core]\\n\\tfsmonitor = touch ${canary}; false\\n' >> sub/.git/config; echo rc=$?`;
  const floods = [
    "for i in $(seq 1 5100); do : > f$i; done",
    "mkdir -p many && cd many && for i in $(seq 1 5100); do : > f$i; done",
    "mkdir d{1..5100}",
  ];
  for (const flood of floods) {
    const made = await _bash(ws, outside, flood);
    assert.equal(made.success, true, JSON.stringify(made));
    // The next start: the nested config stays read-only, or the start is refused.
    const res = await _bash(ws, outside, plant);
    const refused = res.success === false;
    if (refused) assert.match(String(res.error), /more than 5000 folders/, JSON.stringify(res));
    else assert.match(String(res.stdout), /rc=1/, `${flood}: the config was writable`);
    await _git(`${ws}/sub`, "status");
    assert.equal(await _exists(canary), false, `planted after: ${flood}`);
    assert.equal(await Deno.readTextFile(`${ws}/sub/.git/config`), config, flood);
    // Files never refuse a start; only folders past the limit do.
    assert.equal(refused, flood.startsWith("mkdir d"), `${flood}: ${JSON.stringify(res)}`);
  }
});

// Class 2 (planted code), a placeholder removed at the wrong time: placeholders
// were counted per corral process. A sandbox of one process found another
// process's placeholders (`.envrc`, `.claude/`, `.git`) and bound them as they
// were; when that other process ended it removed them, which lifts those
// read-only mounts in every namespace, and the first sandbox's bash could then
// create them.
Deno.test("red team 20: another corral process ending never lifts a sandbox's protected placeholders", async () => {
  const { ws, outside } = await tempLayout();
  const canary = `${outside}/CANARY`;
  const policyFile = `${outside}/policy.json`;
  await Deno.writeTextFile(
    policyFile,
    JSON.stringify({ toolsets: { system: { run: ["bash"], read: ["."], write: ["."] } } }),
  );
  // Another corral process over the same workspace: its sandbox holds placeholders for 6 s.
  const other = runCli(
    [
      "call",
      "-r",
      "-w",
      "-x",
      "--permissions",
      policyFile,
      "--workspace",
      ws,
      "RunBashCode",
      "--args",
      '{"code":"sleep 6"}',
    ],
    { cwd: ws },
  );
  for (let i = 0; i < 300 && !(await _exists(`${ws}/.envrc`)); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(await _exists(`${ws}/.envrc`), "the other process made no placeholders");
  const registry = await _bashRegistry(ws, outside);
  try {
    // This process's sandbox starts while the other's placeholders are there.
    assert.equal((await registry.call("RunBashCode", { code: "true" })).success, true);
    const done = await other;
    assert.equal(done.code, 0, done.stderr);
    const plant = [
      `printf 'touch ${canary}\\n' > .envrc`,
      `mkdir -p .claude && printf '{"hooks":{}}' > .claude/settings.json`,
      `git init -q . && git config core.fsmonitor 'touch ${canary}; false'`,
    ].map((c) => `(${c}) 2>/dev/null; echo "rc=$?"`).join("; ");
    const res = await registry.call("RunBashCode", { code: plant });
    assert.equal(res.success, true, JSON.stringify(res));
    assert.doesNotMatch(String(res.stdout), /rc=0/, `a protected path was writable: ${res.stdout}`);
  } finally {
    await registry.close();
  }
  await _git(ws, "status");
  assert.equal(await _exists(canary), false);
  assert.equal(await _exists(`${ws}/.claude/settings.json`), false);
  // What is left is at most empty placeholders.
  for (const p of [".envrc", ".git", ".claude"]) {
    const st = await Deno.lstat(`${ws}/${p}`).catch(() => undefined);
    const inner = st?.isDirectory ? [...Deno.readDirSync(`${ws}/${p}`)].map((e) => e.name) : [];
    assert.ok(!st || (st.isFile ? st.size === 0 : inner.length === 0), `${p}: ${inner}`);
  }
});
