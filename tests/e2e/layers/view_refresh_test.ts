// A sandbox kept between calls sees what others wrote, and is never started again for it
// (issue 39): its view of the tree is refreshed in place before its next call
// (core/layers/view_refresh.ts). Another session of the same corral, and another corral
// process, make, change and remove files; the sandbox's own process (a background job it
// left running proves it) sees them, by absolute names and relative to a working folder
// inside the workspace. What a process of it holds open keeps writing into the tree, and a
// sandbox racing its own layer cannot turn the clearing of that layer against the host.
import assert from "node:assert/strict";
import { join } from "node:path";
import { findBwrap } from "../../../core/jail/mod.ts";
import { layerBases } from "../../../core/config/install_dir.ts";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

// Fail closed: a machine without bwrap fails these tests (CI installs it).
if (await findBwrap() === undefined) throw new Error("view_refresh_test: no working bwrap here");

const POLICY = {
  toolsets: { system: { run: ["bash"], read: ["."], write: ["."] } },
};

async function _setup() {
  const { base, ws, outside } = await tempLayout();
  const file = join(base, "permissions.json");
  await Deno.writeTextFile(file, JSON.stringify(POLICY));
  const registry = await Registry.create({
    workspace: ws,
    policy: parsePolicy(JSON.stringify(POLICY), file, ws),
    privileges: "rwx",
    cacheDir: null,
    auditPath: join(base, "audit.jsonl"),
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
  const bash = async (principal: string, code: string) => {
    const r = await registry.call("RunBashCode", { code }, { principal });
    assert.equal(typeof r.stdout, "string", JSON.stringify(r));
    return r;
  };
  // Another corral process over the same workspace, sharing this one's layers folder (its
  // tree locks and generations: the default for two corrals of one user).
  const other = async (code: string) => {
    const r = await runCli(
      ["call", "RunBashCode", "--quiet", "--workspace", ws, "--permissions", file, "--args"]
        .concat(JSON.stringify({ code })),
      { env: { CORRAL_LAYERS_DIR: layerBases()[0] } },
    );
    assert.equal(r.code, 0, r.stderr + r.stdout);
  };
  return { base, ws, outside, registry, bash, other };
}

Deno.test("a sandbox kept between calls sees what another session and another corral made, changed and removed", async () => {
  const { ws, registry, bash, other } = await _setup();
  await Deno.writeTextFile(join(ws, "changed.txt"), "v1\n");
  await Deno.writeTextFile(join(ws, "gone.txt"), "gone\n");
  await Deno.mkdir(join(ws, "sub"));
  try {
    // A: a job left running (its pid in the sandbox's own /tmp) and a watcher whose working
    // folder is inside the workspace; both names are looked up before they exist.
    const first = await bash(
      "a",
      "sleep 600 >/dev/null 2>&1 & echo $! > /tmp/alive; " +
        // Written aside and renamed: the call below never reads it half written (truncated).
        "(cd sub && while :; do [ -e made_in_sub.txt ] && cat made_in_sub.txt > /tmp/seen.t && " +
        "mv /tmp/seen.t /tmp/seen; " +
        "sleep 0.05; done) >/dev/null 2>&1 & " +
        "ls made.txt sub/made_in_sub.txt 2>&1; cat changed.txt",
    );
    assert.match(String(first.stdout), /made\.txt'?: No such file/, "the control: looked up first");
    assert.match(String(first.stdout), /v1/);
    // B, another session of this corral: made, changed (by a rename, as editors do), removed.
    const b = await bash(
      "b",
      "echo made > made.txt; echo v2 > t && mv t changed.txt; rm gone.txt; " +
        "echo in-sub > sub/made_in_sub.txt",
    );
    assert.equal(b.success, true, JSON.stringify(b));
    const second = await bash(
      "a",
      "cat made.txt changed.txt; ls gone.txt 2>&1; kill -0 $(cat /tmp/alive) && echo same; " +
        "for i in $(seq 400); do [ -s /tmp/seen ] && break; sleep 0.05; done; cat /tmp/seen",
    );
    const out = String(second.stdout);
    assert.match(out, /^made\nv2\n/, out);
    assert.match(out, /gone\.txt'?: No such file/, out);
    assert.match(out, /\nsame\n/, "the same sandbox: its job still runs");
    assert.match(out, /in-sub\n$/, "a working folder inside the workspace sees it too");
    // Another corral process writes; A sees it at its next call, still the same sandbox.
    await other("echo from-other > other.txt; rm made.txt");
    const third = await bash(
      "a",
      "cat other.txt; ls made.txt 2>&1; kill -0 $(cat /tmp/alive) && echo same",
    );
    assert.match(String(third.stdout), /^from-other\n.*made\.txt'?: No such file.*\nsame\n$/s);
  } finally {
    await registry.close();
  }
});

Deno.test("a file the sandbox wrote, then another session changed: its next call sees the other's version", async () => {
  const { ws, registry, bash } = await _setup();
  try {
    await bash("a", "echo mine > own.txt; sleep 600 >/dev/null 2>&1 & echo $! > /tmp/alive");
    assert.equal(await Deno.readTextFile(join(ws, "own.txt")), "mine\n");
    await bash("b", "echo theirs > t && mv t own.txt");
    const r = await bash("a", "cat own.txt; kill -0 $(cat /tmp/alive) && echo same");
    assert.equal(r.stdout, "theirs\nsame\n");
    // And what it writes next is judged against that version: applied, no conflict.
    const w = await bash("a", "echo again >> own.txt");
    assert.equal(w.success, true, JSON.stringify(w));
    assert.equal(await Deno.readTextFile(join(ws, "own.txt")), "theirs\nagain\n");
  } finally {
    await registry.close();
  }
});

Deno.test("a file a process of the sandbox holds open keeps every line it writes while its layer is cleared", async () => {
  const { ws, registry, bash } = await _setup();
  try {
    // A writes log.txt through one open descriptor, a line every 20 ms, until told to stop.
    await bash(
      "a",
      "(exec 7>>log.txt; i=0; while [ ! -e /tmp/stop ]; do i=$((i+1)); echo $i >&7; " +
        "sleep 0.02; done; echo done >&7) >/dev/null 2>&1 &",
    );
    for (let round = 0; round < 4; round++) {
      // A refused change (reported in this call, or apart when the writer's own settlement
      // came first): A's next call clears its whole layer, but log.txt is held open.
      await bash("a", `echo 'export R=${round}' > .envrc`);
      await bash("b", `echo ${round} > r${round}.txt`);
      const r = await bash("a", `cat r${round}.txt; ls -a .envrc 2>&1`);
      assert.match(String(r.stdout), new RegExp(`^${round}\n.*No such file`, "s"));
      assert.match(String(r.stale_view), /log\.txt is held by a process of the sandbox/);
    }
    await bash("a", "touch /tmp/stop");
    let text = "";
    for (let i = 0; i < 300 && !text.includes("done"); i++) {
      await new Promise((res) => setTimeout(res, 100));
      text = await Deno.readTextFile(join(ws, "log.txt")).catch(() => "");
    }
    const lines = text.trim().split("\n");
    assert.equal(lines.at(-1), "done", "the writer finished and its last line was applied");
    const n = lines.length - 1;
    assert.ok(n > 10, `the writer ran through the refreshes (${n} lines)`);
    assert.deepEqual(lines.slice(0, -1), Array.from({ length: n }, (_, i) => String(i + 1)));
  } finally {
    await registry.close();
  }
});

Deno.test("a sandbox swapping folders of its own layer for links while it is cleared: the host is untouched", async () => {
  const { ws, outside, registry, bash } = await _setup();
  // The canary: where a link in the layer would lead a clearing that followed it.
  await Deno.mkdir(join(outside, "d"));
  await Deno.writeTextFile(join(outside, "d", "f"), "CANARY\n");
  try {
    // A's job swaps .vscode (a protected folder: never applied, so its layer must be cleared)
    // holding f for a link to the host's folder, over and over.
    await bash(
      "a",
      `(while :; do rm -rf .vscode; ln -s ${outside}/d .vscode; rm -f .vscode; ` +
        "mkdir .vscode; echo x > .vscode/f; done) >/dev/null 2>&1 &",
    );
    for (let round = 0; round < 5; round++) {
      await bash("a", "echo 'export X=1' > .envrc");
      // The control: the clearing ran (the refused file is gone from A's view).
      const after = await bash("a", "ls -a .envrc 2>&1");
      assert.match(String(after.stdout), /No such file/, `round ${round}`);
    }
    assert.equal(await Deno.readTextFile(join(outside, "d", "f")), "CANARY\n");
  } finally {
    await registry.close();
  }
  assert.equal(await Deno.readTextFile(join(outside, "d", "f")), "CANARY\n");
  assert.deepEqual([...Deno.readDirSync(join(outside, "d"))].map((e) => e.name), ["f"]);
  assert.equal(await Deno.lstat(join(ws, ".vscode")).then(() => true, () => false), false);
});
