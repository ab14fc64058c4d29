// Attacks on "a grant is what was opened" (issue 20): a folder that a
// narrower sandbox is granted, a folder above it, or the workspace itself is
// swapped for a symlink to a canary folder outside, again and again while
// that sandbox starts. The canary must stay unread and untouched, a swapped
// start is refused naming both paths, and the host keeps answering. A tool
// with a wide write grant makes the swap only in its own write layer: a
// symlink at or above a grant path is refused when the layer is applied. bwrap's host paths are not in /proc/1/cmdline, no
// host descriptor reaches the sandbox, and PATH holds only bound folders.
import { sandboxInit } from "../../../core/sandbox/sealed_runtime.ts";
import assert from "node:assert/strict";
import { parsePolicy } from "../../../core/config/policy.ts";
import { findBwrap } from "../../../core/jail/mod.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import type { ToolResult } from "../../../core/tool/result.ts";
import { FIXTURES } from "../../../testing/mod.ts";
import { tempLayout } from "../../_helpers.ts";

if (await findBwrap() === undefined) {
  throw new Error("grant_swap_test: no working bwrap here (install bubblewrap)");
}

const POKE = `${FIXTURES}grant_swap/poke.ts`;
const SECRET = "SECRET-CANARY";

/**
 * A workspace with the narrow grant `target` (a folder holding canary.txt
 * "REAL"), a canary folder outside holding canary.txt SECRET, and a
 * registry where Poke holds `target` and RunBashCode writes `wide`.
 */
async function _setup(rel: string, wide: string) {
  const { base, ws, outside } = await tempLayout();
  const target = `${ws}/${rel}`;
  await Deno.mkdir(target, { recursive: true });
  await Deno.writeTextFile(`${target}/canary.txt`, "REAL");
  await Deno.writeTextFile(`${outside}/canary.txt`, SECRET);
  // For a swapped parent: the same layout under the canary folder.
  await Deno.mkdir(`${outside}/${rel}`, { recursive: true });
  await Deno.writeTextFile(`${outside}/${rel}/canary.txt`, SECRET);
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: {
        fixture: { read: [target], write: [target] },
        system: { run: ["bash"], read: [wide], write: [wide] },
      },
    }),
    "t.json",
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
    sources: [{
      id: "fixture",
      kind: "builtin",
      modules: [POKE],
      policy: policy.toolset("fixture"),
    }],
  });
  const listing = async (dir: string): Promise<string[]> => {
    const names: string[] = [];
    for await (const e of Deno.readDir(dir)) {
      names.push(e.name);
      if (e.isDirectory) {
        names.push(...(await listing(`${dir}/${e.name}`)).map((n) => `${e.name}/${n}`));
      }
    }
    return names.sort();
  };
  const before = await listing(outside);
  const canaryIntact = async () => {
    // Nothing was made in the canary folder, by the tool or by corral for it.
    assert.deepEqual(await listing(outside), before);
    assert.equal(await Deno.readTextFile(`${outside}/canary.txt`), SECRET);
    await assert.rejects(Deno.stat(`${outside}/pwned.txt`), Deno.errors.NotFound);
    await assert.rejects(Deno.stat(`${outside}/${rel}/pwned.txt`), Deno.errors.NotFound);
  };
  return { base, ws, outside, target, registry, canaryIntact };
}

/** Stop Poke's sandbox, so that the next call starts a fresh one. */
async function _restart(registry: Registry): Promise<void> {
  const sb = await registry.sandboxFor("Poke");
  const pid = sb.pid;
  if (pid === undefined) return;
  try {
    Deno.kill(pid, "SIGKILL");
  } catch { /* gone already */ }
  for (let i = 0; i < 500 && sb.running; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(sb.running, false, "the sandbox did not stop");
}

/** Replace `path` by a symlink to `to` (the real folder kept aside), or put it back. */
function _swap(path: string, to: string | undefined): void {
  const aside = `${path}.real`;
  if (to !== undefined) {
    Deno.renameSync(path, aside);
    Deno.symlinkSync(to, path);
  } else {
    Deno.removeSync(path);
    Deno.renameSync(aside, path);
  }
}

function _leaked(r: ToolResult): boolean {
  return JSON.stringify(r).includes(SECRET);
}

/**
 * The attack at each of `rounds` starts: with `swapped` (the name to swap
 * and where it points), every other start finds the symlink and must be
 * refused; the rest must work on the real folder.
 */
async function _alternate(t: Awaited<ReturnType<typeof _setup>>, name: string, to: string) {
  const rounds = 30;
  let refused = 0;
  for (let i = 0; i < rounds; i++) {
    const swapped = i % 2 === 1;
    if (swapped) _swap(name, to);
    try {
      const r = await t.registry.call("Poke", { dir: t.target });
      assert.ok(!_leaked(r), `round ${i}: the canary was read: ${JSON.stringify(r)}`);
      if (swapped) {
        assert.equal(r.success, false, `round ${i}: a swapped start ran: ${JSON.stringify(r)}`);
        assert.match(String(r.error), /not started: the path .* it binds is now .*; refusing/);
        assert.ok(String(r.error).includes(name.slice(t.ws.length + 1)), String(r.error));
        refused++;
      } else {
        assert.equal(r.success, true, `round ${i}: ${JSON.stringify(r)}`);
        assert.equal(r.read, "REAL");
      }
    } finally {
      if (swapped) _swap(name, undefined);
    }
    await _restart(t.registry);
  }
  assert.equal(refused, rounds / 2);
  await t.canaryIntact();
}

/** Swap `name` in a tight loop while `rounds` sandboxes start; nothing may leak. */
async function _race(t: Awaited<ReturnType<typeof _setup>>, name: string, to: string) {
  let stop = false;
  let swaps = 0;
  const swapper = (async () => {
    while (!stop) {
      _swap(name, to);
      await new Promise((r) => setTimeout(r, Math.random() * 8));
      _swap(name, undefined);
      swaps++;
      await new Promise((r) => setTimeout(r, Math.random() * 8));
    }
  })();
  let ran = 0;
  try {
    // At least 30 starts, and on until the swapper has swapped more than 10 times (refused
    // starts can be quicker than its timers on a busy machine).
    for (let i = 0; i < 30 || (swaps <= 10 && i < 300); i++) {
      const r = await t.registry.call("Poke", { dir: t.target });
      assert.ok(!_leaked(r), `start ${i}: the canary was read: ${JSON.stringify(r)}`);
      if (r.success) ran++;
      await _restart(t.registry);
    }
  } finally {
    stop = true;
    await swapper;
  }
  assert.ok(swaps > 10, `only ${swaps} swaps`);
  await t.canaryIntact();
  // The host still answers, on the real folder.
  const r = await t.registry.call("Poke", { dir: t.target });
  assert.equal(r.success, true, JSON.stringify(r));
  assert.equal(r.read, "REAL");
  return ran;
}

Deno.test("a narrow grant's folder swapped for a symlink: every start on the symlink is refused, the canary untouched", async () => {
  const t = await _setup("out", ".");
  try {
    await _alternate(t, t.target, t.outside);
    await _race(t, t.target, t.outside);
    // A FIFO (or a device) in the grant's place is refused without being opened.
    Deno.renameSync(t.target, `${t.target}.real`);
    try {
      const made = await new Deno.Command("mkfifo", { args: [t.target] }).output();
      assert.ok(made.success);
      await _restart(t.registry);
      const r = await t.registry.call("Poke", { dir: t.target });
      assert.equal(r.success, false, JSON.stringify(r));
      assert.match(String(r.error), /not a file or folder/);
    } finally {
      Deno.removeSync(t.target);
      Deno.renameSync(`${t.target}.real`, t.target);
    }
    await t.canaryIntact();
  } finally {
    await t.registry.close();
  }
});

Deno.test("a narrow grant's parent swapped for a symlink: refused, the canary untouched", async () => {
  const t = await _setup("a/out", ".");
  try {
    // a -> outside/a, so that a/out names outside/a/out, canary and all.
    await _alternate(t, `${t.ws}/a`, `${t.outside}/a`);
    await _race(t, `${t.ws}/a`, `${t.outside}/a`);
    // A parent swapped so that the grant is not there at all: nothing is bound.
    _swap(`${t.ws}/a`, t.outside);
    try {
      await _restart(t.registry);
      const r = await t.registry.call("Poke", { dir: t.target });
      assert.ok(!_leaked(r) && r.wrote !== true, JSON.stringify(r));
    } finally {
      _swap(`${t.ws}/a`, undefined);
    }
    await t.canaryIntact();
  } finally {
    await t.registry.close();
  }
});

Deno.test("the workspace swapped for a symlink: a sandbox granted the workspace is refused, the canary untouched", async () => {
  const t = await _setup(".", ".");
  try {
    // The whole workspace goes: Poke's grant is the workspace itself.
    const alt = async (rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        const swapped = i % 2 === 1;
        if (swapped) _swap(t.ws, t.outside);
        try {
          const r = await t.registry.call("Poke", { dir: t.ws });
          assert.ok(!_leaked(r), JSON.stringify(r));
          if (swapped) {
            assert.equal(r.success, false, JSON.stringify(r));
            assert.match(String(r.error), /not started: .*; refusing/);
          } else assert.equal(r.read, "REAL", JSON.stringify(r));
        } finally {
          if (swapped) _swap(t.ws, undefined);
        }
        await _restart(t.registry);
      }
    };
    await alt(30);
    await _race({ ...t, target: t.ws }, t.ws, t.outside);
  } finally {
    await t.registry.close();
  }
});

Deno.test("a tool with a wide write grant cannot swap a narrower grant, its parent or the workspace: the swap is refused when applied", async () => {
  // RunBashCode writes the folder above the workspace; Poke holds a/out.
  const t = await _setup("a/out", "..");
  try {
    const r = await t.registry.call("RunBashCode", {
      code: [
        `cd ${t.ws}`,
        "mv a/out a/out.real; ln -s ../../outside a/out",
        "mv a a.real; ln -s ../outside a",
        "mv a/out a/out2; rmdir a/out",
        `cd ${t.base}; mv ws ws.real; ln -s outside ws`,
        "true",
      ].join("; "),
    });
    // In its own layer the swaps happen; in the tree, none of them is applied.
    assert.equal(r.success, false, JSON.stringify(r));
    assert.match(String(r.error), /would change where the grant path .* points/);
    for (const p of [`${t.ws}/a/out`, `${t.ws}/a`, t.ws]) {
      assert.equal((await Deno.lstat(p)).isSymlink, false, `${p} was swapped`);
    }
    const poke = await t.registry.call("Poke", { dir: t.target });
    assert.equal(poke.success, true, JSON.stringify(poke));
    assert.equal(poke.read, "REAL");
    await t.canaryIntact();
  } finally {
    await t.registry.close();
  }
});

Deno.test("inside the namespace, /proc/1/cmdline shows no host path, no host folder is open, PATH holds only bound folders", async () => {
  const t = await _setup("out", ".");
  const hostPath = Deno.env.get("PATH") ?? "";
  try {
    const r = await t.registry.call("RunBashCode", {
      code: [
        "tr '\\0' ' ' < /proc/1/cmdline; echo",
        'echo "PATH=$PATH"',
        'for f in /proc/[0-9]*/fd/*; do [ -d "$f" ] && echo "DIRFD $f $(readlink $f)"; done',
        "true",
      ].join("; "),
    });
    assert.equal(r.success, true, r.error);
    const out = String(r.stdout);
    const [cmdline] = out.split("\n");
    // pid 1 is corral's execute-only init (core/sandbox/sealed_runtime.ts), not bwrap.
    assert.ok(cmdline.startsWith(`${sandboxInit()} -c `), cmdline);
    // bwrap's own arguments (binds, the egress folder, the runtime) are not there.
    assert.ok(!cmdline.includes("--bind") && !cmdline.includes("--ro-bind"), cmdline);
    assert.ok(!cmdline.includes("--tmpfs") && !cmdline.includes("--unshare"), cmdline);
    assert.doesNotMatch(out, /DIRFD/, "a directory descriptor reached the sandbox");
    const path = out.match(/^PATH=(.*)$/m)?.[1] ?? "";
    for (const d of path.split(":").filter(Boolean)) {
      assert.ok(
        ["/usr", "/bin", "/sbin", "/lib", t.ws].some((b) => d === b || d.startsWith(b + "/")),
        `PATH holds ${d}, which the namespace does not bind`,
      );
    }
    // The host's PATH has folders that are not bound there: they are gone.
    const unbound = hostPath.split(":").filter((d) => d && !/^\/(usr|bin|sbin)(\/|$)/.test(d));
    for (const d of unbound) assert.ok(!path.split(":").includes(d), `PATH kept ${d}`);
  } finally {
    await t.registry.close();
  }
});
