// Red team for issue 20: variants of its seven classes, tried as an outsider
// would with ordinary tool calls (jailed bash, the files tools) against real
// bwrap, real git and real sandboxes. Each test tries the forbidden thing and
// checks that it did not happen.
import assert from "node:assert/strict";
import { parsePolicy } from "../core/config/policy.ts";
import { Registry } from "../core/registry/registry.ts";
import { Reporter } from "../core/tool/reporter.ts";
import { tempLayout } from "./_helpers.ts";

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
