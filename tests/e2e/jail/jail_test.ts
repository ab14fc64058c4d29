// The sandbox namespace (bubblewrap) as seen by the processes a tool starts,
// and their clean environment, attacked end to end through the registry and
// the CLI. More attacks on the namespace are in tests/e2e/jail/namespace_test.ts.
import assert from "node:assert/strict";
import { findBwrap } from "../../../core/jail/mod.ts";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { FIXTURES, ROOT } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

// Fail closed here too: a machine without bwrap fails these tests (CI installs it).
const BWRAP = await findBwrap();
const NO_BWRAP = false;
if (BWRAP === undefined) throw new Error("jail_test: no working bwrap here (install bubblewrap)");

async function _system(
  ws: string,
  system: Record<string, unknown>,
  extra: { bwrap?: string | null } = {},
): Promise<Registry> {
  const policy = parsePolicy(JSON.stringify({ toolsets: { system } }), "test.json", ws);
  return await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
    ...extra,
  });
}

async function _plugin(ws: string, entry: Record<string, unknown>): Promise<Registry> {
  const policy = parsePolicy(JSON.stringify({ plugins: { jailfix: entry } }), "test.json", ws);
  return await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    noBuiltins: true,
    reporter: new Reporter({ sink: () => {}, color: false }),
    sources: [{
      id: "plugin:jailfix",
      kind: "plugin",
      modules: [`${FIXTURES}jail/direct_run.ts`],
      policy: policy.plugin("jailfix"),
    }],
  });
}

function _rand(): string {
  return crypto.randomUUID().slice(0, 8);
}

Deno.test({
  name: "a jailed RunBashCode writes its grant but cannot write a host path outside it",
  ignore: NO_BWRAP,
  fn: async () => {
    const { ws } = await tempLayout();
    // Outside the workspace and NOT under /tmp (the jail's /tmp is private anyway).
    const outside = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "corral-jail-" });
    const tmpName = `/tmp/outside-${_rand()}`;
    const registry = await _system(ws, { run: ["bash"], read: ["."], write: ["."] });
    try {
      assert.equal(registry.get("RunBashCode")?.jail, "bwrap");
      const res = await registry.call("RunBashCode", {
        code: `echo in > inside.txt; echo x > ${outside}/escape.txt; echo x > ${tmpName}; ` +
          `echo x > $HOME/.profile; touch /etc/corral-${_rand()}; true`,
      });
      assert.equal(res.success, true, res.error);
      assert.equal(await Deno.readTextFile(`${ws}/inside.txt`), "in\n");
      // The outside folder does not even exist in the namespace.
      assert.match(res.stderr as string, /escape\.txt: (No such file or directory|Read-only)/);
      await assert.rejects(Deno.stat(`${outside}/escape.txt`), Deno.errors.NotFound);
      await assert.rejects(Deno.stat(tmpName), Deno.errors.NotFound);
    } finally {
      await registry.close();
      await Deno.remove(outside, { recursive: true });
    }
  },
});

Deno.test({
  name: "an x tool's processes see only its grant: read-only without w, nothing without r",
  ignore: NO_BWRAP,
  fn: async () => {
    const { ws } = await tempLayout();
    await Deno.writeTextFile(`${ws}/seen.txt`, "seen");
    // HelperRun declares "rx": the workspace is there, read-only.
    const ro = await _plugin(ws, { run: ["bash"], read: ["."] });
    // DirectRun declares "x" only: the workspace is an empty folder of the namespace.
    try {
      const res = await ro.call("HelperRun", {
        command: "bash",
        args: ["-c", "cat seen.txt; echo x > file.txt"],
      });
      assert.equal(res.exit_code, 1, JSON.stringify(res));
      assert.equal(res.stdout, "seen");
      assert.match(res.stderr as string, /Read-only file system/);
      await assert.rejects(Deno.stat(`${ws}/file.txt`), Deno.errors.NotFound);
      const blind = await ro.call("DirectRun", { code: "ls -A; cat seen.txt; echo x > f2.txt" });
      assert.equal(blind.ran, true, JSON.stringify(blind));
      assert.equal(blind.stdout, "", "an x-only tool sees none of the workspace");
      await assert.rejects(Deno.stat(`${ws}/f2.txt`), Deno.errors.NotFound);
    } finally {
      await ro.close();
    }
  },
});

Deno.test({
  name: "a jailed RunBashCode cannot reach a 127.0.0.1 server that an unjailed one reaches",
  ignore: NO_BWRAP,
  fn: async () => {
    const { ws } = await tempLayout();
    let hits = 0;
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
      hits++;
      return new Response("pong");
    });
    const code = `exec 3<>/dev/tcp/127.0.0.1/${server.addr.port} && ` +
      `printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3`;
    const jailed = await _system(ws, { run: ["bash"], read: ["."], write: ["."] });
    const open = await _system(ws, { run: ["bash"], read: ["."], write: ["."], jail: "off" });
    try {
      const denied = await jailed.call("RunBashCode", { code, timeout: 5 });
      assert.equal(denied.success, false);
      assert.doesNotMatch(denied.stdout as string, /pong/);
      assert.equal(hits, 0, "the server saw no request from the jail");
      // Control: the same code without the jail does reach it.
      assert.equal(open.get("RunBashCode")?.jail, "none");
      const reached = await open.call("RunBashCode", { code, timeout: 5 });
      assert.match(reached.stdout as string, /pong/);
      assert.equal(hits, 1);
    } finally {
      await jailed.close();
      await open.close();
      await server.shutdown();
    }
  },
});

/** Host pids whose command line contains `marker`. */
async function _pidsWith(marker: string): Promise<number[]> {
  const found: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmd = await Deno.readTextFile(`/proc/${e.name}/cmdline`);
      if (cmd.includes(marker)) found.push(Number(e.name));
    } catch { /* gone */ }
  }
  return found;
}

Deno.test({
  name: "a timeout kills the whole jailed process tree, background children included",
  ignore: NO_BWRAP,
  fn: async () => {
    const { ws } = await tempLayout();
    const marker = `corral-bg-${_rand()}`;
    const registry = await _system(ws, { run: ["bash"], read: ["."], write: ["."] });
    try {
      const res = await registry.call("RunBashCode", {
        code: `(exec -a ${marker} sleep 100) & echo started; sleep 100`,
        timeout: 1,
      });
      assert.equal(res.timed_out, true);
      assert.equal(res.stdout, "started\n");
      // The kernel tears the PID namespace down after bwrap dies; wait for it.
      let left = await _pidsWith(marker);
      for (let i = 0; i < 50 && left.length; i++) {
        await new Promise((r) => setTimeout(r, 100));
        left = await _pidsWith(marker);
      }
      assert.deepEqual(left, [], `background sleep survived: ${left}`);
    } finally {
      await registry.close();
    }
  },
});

Deno.test("without a working bwrap, tools that hold files or commands are not loaded (fail closed)", async () => {
  const { ws } = await tempLayout();
  const grant = { run: ["bash"], read: ["."], write: ["."] };
  const missing = await _system(ws, grant, { bwrap: null });
  const auto = await _system(ws, { ...grant, jail: "auto" }, { bwrap: null });
  const off = await _system(ws, { ...grant, jail: "off" }, { bwrap: null });
  try {
    for (const registry of [missing, auto]) {
      const bash = registry.list().find((t) => t.name === "RunBashCode")!;
      assert.equal(bash.status, "skipped");
      assert.match(bash.reason!, /needs the sandbox namespace, but no working bwrap was found/);
      assert.match(bash.reason!, /apt-get install bubblewrap.*"jail": "off"/);
      const res = await registry.call("RunBashCode", { code: "echo ran > ran.txt" });
      assert.equal(res.success, false);
      await assert.rejects(Deno.stat(`${ws}/ran.txt`), Deno.errors.NotFound);
    }
    // Only an explicit opt-out runs it without the namespace, marked as such.
    assert.equal(off.get("RunBashCode")?.status, "loaded");
    assert.equal(off.get("RunBashCode")?.jail, "none");
  } finally {
    await missing.close();
    await auto.close();
    await off.close();
  }
});

Deno.test({
  name: "a plugin holding x may not start bwrap: not on its run list, and masked in its namespace",
  ignore: NO_BWRAP,
  fn: async () => {
    const { ws } = await tempLayout();
    const registry = await _plugin(ws, { run: ["bash"], read: ["."], write: ["."] });
    try {
      // Deno refuses bwrap itself: it is not on the run list.
      const direct = await registry.call("HelperRun", {
        command: BWRAP!,
        args: ["--bind", "/", "/", "true"],
      });
      assert.equal(direct.success, false, JSON.stringify(direct));
      // Through bash it is masked (an empty, non-executable file).
      const via = await registry.call("HelperRun", {
        command: "bash",
        args: ["-c", `${BWRAP} --bind / / touch /var/tmp/corral-bwrap-${_rand()}; echo rc=$?`],
      });
      assert.match(via.stdout as string, /rc=(126|127)/, JSON.stringify(via));
      assert.match(via.stderr as string, /Permission denied|No such file/);
    } finally {
      await registry.close();
    }
  },
});

Deno.test("the host's environment never reaches a tool's subprocess; listed names do", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(
    `${base}/permissions.json`,
    JSON.stringify({
      toolsets: {
        system: { run: ["bash"], read: ["."], write: ["."], env: ["CORRAL_TEST_PASSED"] },
      },
    }),
  );
  const out = await runCli(
    [
      "call",
      "RunBashCode",
      "-rwx",
      "--permissions",
      `${base}/permissions.json`,
      "--args",
      JSON.stringify({
        code: "env; cat /proc/self/environ; echo; echo passed=$CORRAL_TEST_PASSED",
      }),
    ],
    { cwd: ws, env: { CORRAL_TEST_SECRET: "s3cr3t-value", CORRAL_TEST_PASSED: "visible-value" } },
  );
  assert.equal(out.code, 0, out.stderr);
  assert.ok(!out.stdout.includes("s3cr3t-value"), "the secret is not in stdout");
  assert.ok(!out.stderr.includes("s3cr3t-value"), "the secret is not in stderr");
  assert.match(out.stdout, /passed=visible-value/);
  assert.match(out.stdout, /PATH=/);
});

Deno.test("corral list marks each tool's sandbox as namespaced or not", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(
    `${base}/permissions.json`,
    JSON.stringify({
      toolsets: { files: { read: ["."] }, system: { run: ["bash"], read: ["."], jail: "off" } },
    }),
  );
  const args = ["--permissions", `${base}/permissions.json`, "-rx"];
  const text = await runCli(["list", ...args], { cwd: ws });
  assert.match(text.stdout, /RunPythonCode[^\n]*\n[^\n]*jail: NONE \(no namespace: opted out\)/);
  assert.match(text.stdout, /ReadFile[^\n]*\n[^\n]*jail: bwrap \(namespace = grant\)/);
  const json = await runCli(["list", "--json", ...args], { cwd: ws });
  const tools = JSON.parse(json.stdout) as Array<{ name: string; jail: string | null }>;
  assert.equal(tools.find((t) => t.name === "RunBashCode")?.jail, "none");
  assert.equal(tools.find((t) => t.name === "ReadFile")?.jail, "bwrap");
});

Deno.test("corral list on a machine without bwrap names the reason and the fix, and the call refuses", async () => {
  const { ws } = await tempLayout();
  await Deno.writeTextFile(`${ws}/a.txt`, "one two");
  // No bwrap on PATH (and no remembered probe): as on a machine without it.
  const env = { PATH: "/nonexistent", CORRAL_TOOL_DIRS: `${ROOT}plugins` };
  const list = await runCli(["list", "--json", "--workspace", ws], { env });
  assert.equal(list.code, 0, list.stderr);
  const tools = JSON.parse(list.stdout) as Array<
    { name: string; status: string; reason: string | null }
  >;
  for (const name of ["ReadFile", "CreateFile", "SearchText"]) {
    const t = tools.find((x) => x.name === name)!;
    assert.equal(t.status, "skipped", name);
    assert.match(String(t.reason), /needs the sandbox namespace, but no working bwrap was found/);
    assert.match(String(t.reason), /apt-get install bubblewrap/);
  }
  // A plugin that holds no files or commands still loads.
  assert.equal(tools.find((x) => x.name === "RollDice")?.status, "loaded");
  const call = await runCli(
    ["call", "WordCount", "--workspace", ws, "--args", '{"filepath":"a.txt"}'],
    { env },
  );
  assert.equal(call.code, 1);
  assert.match(call.stdout, /not loaded: needs the sandbox namespace/);
});
