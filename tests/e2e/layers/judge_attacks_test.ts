// Red team for issues 20 and 27: variants of their classes, tried as an outsider
// would with ordinary tool calls (jailed bash, the files tools) against real
// bwrap, real git and real sandboxes. Each test tries the forbidden thing and
// checks that it did not happen.
import assert from "node:assert/strict";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { runCli, tempLayout, waitInLayer } from "../../_helpers.ts";

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

async function _bashRegistry(ws: string, outside: string, run = ["bash"]): Promise<Registry> {
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { system: { run, read: ["."], write: ["."] } } }),
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
    return await registry.call("RunBashCode", { code });
  } finally {
    await registry.close();
  }
}

async function _exists(p: string): Promise<boolean> {
  return await Deno.lstat(p).then(() => true, () => false);
}

// Class 2 (planted code): a scan that found nested repositories stopped after 5000
// folder entries. Changes are judged by what was written, at any depth: no scan,
// no limit to blind.
Deno.test("red team 20: a flood of files or folders never blinds the rules for nested repositories", async () => {
  const { ws, outside } = await tempLayout();
  const canary = `${outside}/CANARY`;
  assert.equal((await _git(ws, "init", "-q")).code, 0);
  await Deno.mkdir(`${ws}/a/b/c/d`, { recursive: true });
  const deep = `${ws}/a/b/c/d/sub`;
  await Deno.mkdir(deep);
  assert.equal((await _git(deep, "init", "-q")).code, 0);
  const config = await Deno.readTextFile(`${deep}/.git/config`);
  const made = await _bash(
    ws,
    outside,
    "mkdir d{1..5100} && for i in $(seq 1 2000); do : > f$i; done",
  );
  assert.equal(made.success, true, JSON.stringify(made));
  const res = await _bash(
    ws,
    outside,
    `printf '[core]\\n\\tfsmonitor = touch ${canary}; false\\n' >> a/b/c/d/sub/.git/config`,
  );
  assert.equal(res.success, false, JSON.stringify(res));
  assert.match(String(res.error), /core\.fsmonitor/);
  await _git(deep, "status");
  assert.equal(await _exists(canary), false);
  assert.equal(await Deno.readTextFile(`${deep}/.git/config`), config);
});

// Class 4 (changes of the same file): two corral processes over one workspace
// write one file at the same time. One version wins the tree; the other is a
// conflict, kept in corral's folder and named in that call's error, never lost.
Deno.test("red team 27: two corral processes writing one file: a conflict, both versions kept", async () => {
  const { ws, outside } = await tempLayout();
  await Deno.writeTextFile(`${ws}/shared.txt`, "base\n");
  const policyFile = `${outside}/policy.json`;
  await Deno.writeTextFile(
    policyFile,
    JSON.stringify({ toolsets: { system: { run: ["bash"], read: ["."], write: ["."] } } }),
  );
  const call = (code: string) =>
    runCli([
      "call",
      "-r",
      "-w",
      "-x",
      "--permissions",
      policyFile,
      "--workspace",
      ws,
      "--audit",
      `${outside}/audit.jsonl`,
      "RunBashCode",
      "--args",
      JSON.stringify({ code }),
    ], { cwd: ws, env: { CORRAL_LAYERS_DIR: `${outside}/layers` } });
  // The slow one writes first (its layer shows it), the quick one writes and is applied while
  // the slow one waits for a file that only the test makes (a listing sees the tree's changes).
  const slow = call("echo slow >> shared.txt; until ls | grep -qx go; do sleep 0.05; done");
  await waitInLayer(`${outside}/layers`, "shared.txt", "slow");
  const quick = await call("echo quick >> shared.txt");
  await Deno.writeTextFile(`${ws}/go`, "");
  const late = await slow;
  assert.equal(quick.code, 0, quick.stderr + quick.stdout);
  assert.equal(await Deno.readTextFile(`${ws}/shared.txt`), "base\nquick\n");
  assert.equal(late.code, 1, late.stdout);
  const result = JSON.parse(late.stdout);
  assert.match(result.error, /conflicted with a change made meanwhile outside this sandbox/);
  // The model is told no host path outside the workspace; the audit line names the kept copy.
  const lines = (await Deno.readTextFile(`${outside}/audit.jsonl`)).trim().split("\n")
    .map((l) => JSON.parse(l));
  const conflict = lines.find((l) => l.changes?.conflicts?.length)?.changes.conflicts[0];
  assert.equal(conflict?.path, "shared.txt", JSON.stringify(lines));
  assert.equal(await Deno.readTextFile(conflict.why), "base\nslow\n");
  assert.deepEqual(lines.find((l) => l.changes?.changed)?.changes.paths, ["~shared.txt"]);
});

// Class 1 (a path is what was opened): a folder inside the tree swapped for a
// symlink to a folder outside, in a tight loop, while a tool's writes there are
// applied: the applier checks where it stands after every step, so no write, no
// removal ever lands outside.
Deno.test("red team 27: applies never write outside through a folder swapped in a loop", async () => {
  const { ws, outside } = await tempLayout();
  const names = ["a.txt", "b.txt", "c.txt", "gone.txt"];
  for (const n of names) await Deno.writeTextFile(`${outside}/${n}`, "precious\n");
  await Deno.mkdir(`${ws}/sub`);
  await Deno.writeTextFile(`${ws}/sub/gone.txt`, "mine\n");
  await Deno.symlink(outside, `${ws}/lnk`);
  const registry = await _bashRegistry(ws, outside);
  let stop = false;
  let swaps = 0;
  const swapper = (async () => {
    // renameat2(RENAME_EXCHANGE) of sub and lnk, from the host, as fast as it goes.
    const py = new Deno.Command("python3", {
      args: [
        "-c",
        "import ctypes,sys,time\nlibc=ctypes.CDLL(None,use_errno=True)\nn=0\nend=time.time()+9\n" +
        "while time.time()<end:\n  libc.renameat2(-100,b'sub',-100,b'lnk',2); n+=1\nprint(n)",
      ],
      cwd: ws,
      stdout: "piped",
    }).spawn();
    const out = await py.output();
    swaps = Number(new TextDecoder().decode(out.stdout).trim());
    stop = true;
  })();
  let calls = 0;
  try {
    while (!stop) {
      await registry.call("RunBashCode", {
        code:
          "for n in a b c; do echo pwned > sub/$n.txt 2>/dev/null; done; rm -f sub/gone.txt; true",
      });
      calls++;
    }
  } finally {
    await swapper;
    await registry.close();
  }
  assert.ok(swaps > 1000 && calls > 3, `only ${swaps} swaps and ${calls} calls`);
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
    ].join("; "),
  );
  assert.equal(res.success, false, JSON.stringify(res));
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
    assert.equal(await _exists(`${ws}/${p}`), false, `${p} was written`);
  }
});
