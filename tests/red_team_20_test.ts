// Red team for issue 20: variants of its seven classes, tried as an outsider
// would with ordinary tool calls (jailed bash, the files tools) against real
// bwrap, real git and real sandboxes. Each test tries the forbidden thing and
// checks that it did not happen.
import assert from "node:assert/strict";
import { parsePolicy } from "../core/config/policy.ts";
import { plantedMounts } from "../core/guard/planted_mounts.ts";
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
    assert.equal(registry.get("RunBashCode")?.status, "loaded", JSON.stringify(registry.problems));
    // This process's sandbox starts while the other's placeholders are there.
    assert.equal((await registry.call("RunBashCode", { code: "true" })).success, true);
    const done = await other;
    assert.equal(done.code, 0, done.stderr + done.stdout);
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

// Class 1 (a grant is what was opened), a placeholder's folder swapped: corral
// makes and removes placeholders on the host, by name, before the launcher
// opens anything. A nested repository's folder (`sub`, not pinned in a sandbox
// that started before it existed) swapped for a symlink to a folder outside in
// a tight loop sent those creations (and removals) through the symlink: empty
// `.git`, `.envrc`, … appeared outside the grant, and a removal could delete a
// file of that name there.
Deno.test("red team 20: placeholders are never made or removed outside through a folder swapped in a loop", async () => {
  const { ws, outside } = await tempLayout();
  const names = [".npmrc", ".bashrc", ".profile", ".gitconfig", ".zshrc"];
  for (const n of names) await Deno.writeTextFile(`${outside}/${n}`, "precious\n");
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: { system: { run: ["bash", "python3"], read: ["."], write: ["."] } },
    }),
    `${outside}/policy.json`,
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
  try {
    // Jailed bash makes a nested repository and swaps it with a symlink to outside, atomically.
    const swap = `git init -q sub && ln -s ${outside} lnk && (python3 - <<'PY'
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
end = time.time() + 12
while time.time() < end:
    libc.renameat2(-100, b"sub", -100, b"lnk", 2)
PY
) > /dev/null 2>&1 & sleep 0.2; echo swapping`;
    const res = await registry.call("RunBashCode", { code: swap });
    assert.match(String(res.stdout), /swapping/, JSON.stringify(res));
    // What every sandbox start over the workspace does on the host, many times.
    let starts = 0;
    for (const t0 = Date.now(); Date.now() - t0 < 8000;) {
      try {
        plantedMounts({ write: [ws], workspace: ws, protect: [], hide: [] }).release();
        starts++;
      } catch { /* refused: a folder was swapped */ }
    }
    assert.ok(starts > 100, `only ${starts} starts`);
  } finally {
    await registry.close();
  }
  const left = [...Deno.readDirSync(outside)].map((e) => e.name).sort();
  assert.deepEqual(left, [...names].sort(), "something was made or removed outside");
  for (const n of names) assert.equal(await Deno.readTextFile(`${outside}/${n}`), "precious\n", n);
});

// Class 2 (planted code) in a home folder: `.gitconfig` was protected, but git
// obeys `~/.config/git/config` just the same (its XDG global config), and vim
// runs `~/.vimrc`; mise obeys a project's `.config/mise.toml` like `mise.toml`.
Deno.test("red team 20: git's XDG config, .vimrc and mise's .config files are protected like .gitconfig", async () => {
  const { ws, outside } = await tempLayout();
  const canary = `${outside}/CANARY`;
  assert.equal((await _git(ws, "init", "-q")).code, 0);
  const res = await _bash(
    ws,
    outside,
    [
      `mkdir -p .config/git && printf '[core]\\n\\tfsmonitor = touch ${canary}; false\\n' > .config/git/config`,
      `printf '!touch ${canary}\\n' > .vimrc`,
      `mkdir -p .config/mise && printf '[hooks]\\nenter = "touch ${canary}"\\n' > .config/mise/config.toml`,
      `printf '[hooks]\\nenter = "touch ${canary}"\\n' > .config/mise.toml`,
    ].map((c) => `(${c}) 2>/dev/null; echo "rc=$?"`).join("; "),
  );
  assert.doesNotMatch(String(res.stdout), /rc=0/, `a protected path was writable: ${res.stdout}`);
  // The user's own git with this folder as HOME.
  await new Deno.Command("git", {
    args: ["status"],
    cwd: ws,
    env: { HOME: ws, XDG_CONFIG_HOME: `${ws}/.config`, GIT_CONFIG_NOSYSTEM: "1" },
    stdout: "null",
    stderr: "null",
  }).output();
  assert.equal(await _exists(canary), false);
  for (
    const p of [".config/git/config", ".vimrc", ".config/mise.toml", ".config/mise/config.toml"]
  ) {
    const st = await Deno.lstat(`${ws}/${p}`).catch(() => undefined);
    assert.ok(!st || (st.isFile && st.size === 0), `${p} was written`);
  }
});
