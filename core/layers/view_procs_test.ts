// The pause of a sandbox's processes (core/layers/view_procs.ts) on a stand-in launcher: a
// bash whose descendants keep running and forking. Paused, every one of them is stopped and
// what they hold is reported; resumed, they run again; a launcher that is gone cannot be paused.
import assert from "node:assert/strict";
import { join } from "node:path";
import { lookAtSandbox, pauseSandbox } from "./view_procs.ts";

/** The states of `pid`'s descendants (R, S, T, …), read by /bin/sh (the test holds -A). */
function _states(pid: number): string[] {
  const out = new Deno.Command("/bin/bash", {
    args: [
      "-c",
      'q=$(cat /proc/$1/task/*/children 2>/dev/null); while [ -n "$q" ]; do n=; for p in $q; do ' +
      'cut -d" " -f3 /proc/$p/stat 2>/dev/null; n="$n $(cat /proc/$p/task/*/children 2>/dev/null)"; ' +
      "done; q=$(echo $n); done",
      "states",
      String(pid),
    ],
    stdout: "piped",
  }).outputSync();
  return new TextDecoder().decode(out.stdout).trim().split("\n").filter(Boolean);
}

Deno.test("pauseSandbox stops every descendant, forking ones too, reports what they hold, and resumes them", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir());
  await Deno.writeTextFile(join(dir, "held.txt"), "x");
  // A session of its own: its whole process group is killed at the end (the busy loops too).
  const launcher = new Deno.Command("/usr/bin/setsid", {
    args: [
      "/bin/bash",
      "-c",
      `(exec 7<${dir}/held.txt; cd ${dir}; while :; do sleep 0.01; done) & ` +
      "(while :; do :; done) & (while :; do /bin/true; done) & wait",
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    for (let i = 0; i < 100 && _states(launcher.pid).length < 3; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const looked = await lookAtSandbox(launcher.pid);
    assert.ok(looked?.some((h) => h.kind === "fd" && h.path === join(dir, "held.txt")));
    const paused = await pauseSandbox(launcher.pid);
    assert.ok(paused, "paused");
    try {
      const states = _states(launcher.pid);
      assert.ok(states.length >= 3, states.join());
      assert.deepEqual(states.filter((s) => !/[TtZX]/.test(s)), [], states.join());
      const held = paused.held.filter((h) => h.path.startsWith(dir));
      const ino = Deno.statSync(join(dir, "held.txt")).ino;
      assert.ok(held.some((h) => h.kind === "fd" && h.ino === ino), JSON.stringify(held));
      assert.ok(held.some((h) => h.kind === "cwd" && h.path === dir), JSON.stringify(held));
      // Still stopped a while later: nothing of theirs runs until resumed.
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(_states(launcher.pid).filter((s) => !/[TtZX]/.test(s)), []);
    } finally {
      assert.equal(await paused.resume(), true);
    }
    let running: string[] = [];
    for (let i = 0; i < 100; i++) {
      running = _states(launcher.pid).filter((s) => /[RSD]/.test(s));
      if (running.length >= 3) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(running.length >= 3, "resumed");
  } finally {
    new Deno.Command("/bin/kill", { args: ["-KILL", "--", `-${launcher.pid}`] }).outputSync();
    await launcher.status;
    // None of its processes is left running (they would spin for ever): SIGKILL lands at once,
    // the exit a moment later.
    let left = _group(launcher.pid);
    for (let i = 0; i < 100 && left.length; i++) {
      await new Promise((r) => setTimeout(r, 50));
      left = _group(launcher.pid);
    }
    assert.deepEqual(left, []);
  }
});

/** The processes of the process group `pgid` still there (zombies aside). */
function _group(pgid: number): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(f[2]) === pgid && f[0] !== "Z") out.push(Number(e.name));
    } catch { /* gone */ }
  }
  return out;
}

Deno.test("pauseSandbox of a launcher that is gone: nothing to pause, nothing held", async () => {
  const gone = new Deno.Command("/bin/true").spawn();
  await gone.status;
  const paused = await pauseSandbox(gone.pid);
  // No process to stop is an empty pause (or none at all): either way nothing is held.
  assert.deepEqual(paused?.held ?? [], []);
  await paused?.resume();
});
