import assert from "node:assert/strict";
import { limitsProbe, spawnLimited } from "./limits.ts";

function _exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

const _CGROUP = limitsProbe().kind !== "rlimit";

Deno.test({
  name: "release kills what is left in a sandbox's groups, removes them and tells a hit limit",
  ignore: !_CGROUP,
  fn: async () => {
    // Hits its limit of 8 processes, then keeps a few sleepers in the groups.
    const script = "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 30 & done; wait";
    const { child, limits } = spawnLimited({ pids: 8, memoryMb: 64 }, false, "/bin/sh", [
      "-c",
      script,
    ], { openBinds: false, cwd: "/", env: { PATH: "/usr/bin:/bin" } });
    for (let i = 0; i < 200 && !limits.groups.every((g) => _exists(`${g}/cgroup.procs`)); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 200));
    const procs = (await Deno.readTextFile(`${limits.groups[0]}/cgroup.procs`)).trim().split("\n");
    assert.ok(procs.length >= 2, procs.join(","));
    const { hitProcessLimit } = await limits.release();
    assert.equal(hitProcessLimit, true);
    for (const g of limits.groups) assert.ok(!_exists(g), `${g} is still there`);
    for (const p of procs) assert.ok(!_exists(`/proc/${p}/status`) || _zombie(p), `${p} lives`);
    await child.status;
    await Promise.all([child.stdout.cancel(), child.stderr.cancel(), child.stdin.close()]);
  },
});

function _zombie(pid: string): boolean {
  try {
    return /State:\s+Z/.test(Deno.readTextFileSync(`/proc/${pid}/status`));
  } catch {
    return true;
  }
}

Deno.test({
  name: "a sandbox within its limits releases with no hit, and its groups are gone",
  ignore: !_CGROUP,
  fn: async () => {
    const { child, limits } = spawnLimited({ pids: 16, memoryMb: 64 }, false, "/bin/sh", [
      "-c",
      "sleep 30",
    ], { openBinds: false, cwd: "/", env: { PATH: "/usr/bin:/bin" } });
    for (let i = 0; i < 200 && !limits.groups.every((g) => _exists(`${g}/cgroup.procs`)); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.deepEqual(await limits.release(), { hitProcessLimit: false });
    for (const g of limits.groups) assert.ok(!_exists(g), `${g} is still there`);
    await child.status;
    await Promise.all([child.stdout.cancel(), child.stderr.cancel(), child.stdin.close()]);
  },
});
