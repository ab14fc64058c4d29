// The subprocess jail (bubblewrap) and the clean environment of subprocesses,
// attacked end to end through the registry and the CLI.
import assert from "node:assert/strict";
import { findBwrap } from "../core/guard/jail.ts";
import { parsePolicy } from "../core/config/policy.ts";
import { Registry } from "../core/registry/registry.ts";
import { Reporter } from "../core/tool/reporter.ts";
import { FIXTURES, runCli, tempLayout } from "./_helpers.ts";

const BWRAP = await findBwrap();
const NO_BWRAP = BWRAP === undefined;
if (NO_BWRAP) console.error("jail_test: no working bwrap here; jail tests are ignored");

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
    const registry = await _system(ws, { run: ["bash"], write: ["."] });
    try {
      assert.equal(registry.get("RunBashCode")?.jail, "bwrap");
      const res = await registry.call("RunBashCode", {
        code: `echo in > inside.txt; echo x > ${outside}/escape.txt; echo x > ${tmpName}; ` +
          `echo x > $HOME/.profile; touch /etc/corral-${_rand()}; true`,
      });
      assert.equal(res.success, true, res.error);
      assert.equal(await Deno.readTextFile(`${ws}/inside.txt`), "in\n");
      assert.match(res.stderr as string, /escape\.txt: Read-only file system/);
      await assert.rejects(Deno.stat(`${outside}/escape.txt`), Deno.errors.NotFound);
      await assert.rejects(Deno.stat(tmpName), Deno.errors.NotFound);
    } finally {
      await registry.close();
      await Deno.remove(outside, { recursive: true });
    }
  },
});

Deno.test({
  name: "without a write path in the policy, a jailed RunBashCode cannot write even the workspace",
  ignore: NO_BWRAP,
  fn: async () => {
    const { ws } = await tempLayout();
    const registry = await _system(ws, { run: ["bash"] });
    try {
      const res = await registry.call("RunBashCode", { code: "echo x > file.txt" });
      assert.equal(res.success, false);
      assert.match(res.stderr as string, /Read-only file system/);
      await assert.rejects(Deno.stat(`${ws}/file.txt`), Deno.errors.NotFound);
    } finally {
      await registry.close();
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
    const jailed = await _system(ws, { run: ["bash"] });
    const open = await _system(ws, { run: ["bash"], jail: "off" });
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
    const registry = await _system(ws, { run: ["bash"] });
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

Deno.test('jail "required" without a working bwrap skips x tools with that reason', async () => {
  const { ws } = await tempLayout();
  const required = await _system(ws, { run: ["bash"], jail: "required" }, { bwrap: null });
  const auto = await _system(ws, { run: ["bash"] }, { bwrap: null });
  try {
    const bash = required.list().find((t) => t.name === "RunBashCode")!;
    assert.equal(bash.status, "skipped");
    assert.match(bash.reason!, /toolsets\.system\.jail is "required".*no working bwrap/);
    const res = await required.call("RunBashCode", { code: "echo ran" });
    assert.equal(res.success, false);
    assert.doesNotMatch(JSON.stringify(res), /"ran\\n"/);
    // Without the requirement it loads, marked unjailed.
    assert.equal(auto.get("RunBashCode")?.status, "loaded");
    assert.equal(auto.get("RunBashCode")?.jail, "none");
    // Tools that start no process carry no jail mark.
    assert.equal(auto.get("ReadFile")?.jail, undefined);
  } finally {
    await required.close();
    await auto.close();
  }
});

Deno.test({
  name: "a jailed plugin may start only bwrap: a direct Deno.Command of its command is denied",
  ignore: NO_BWRAP,
  fn: async () => {
    const { ws } = await tempLayout();
    const registry = await _plugin(ws, { run: ["bash"], write: ["."] });
    try {
      const direct = await registry.call("DirectRun", { code: "echo x > direct.txt" });
      assert.equal(direct.ran, false, JSON.stringify(direct));
      assert.equal(direct.error_name, "NotCapable");
      await assert.rejects(Deno.stat(`${ws}/direct.txt`), Deno.errors.NotFound);
      // Through the helper the same command runs, jailed, in the workspace.
      const helper = await registry.call("HelperRun", {
        command: "bash",
        args: ["-c", "echo ok > helper.txt; cat /proc/1/cmdline | tr '\\0' ' '"],
      });
      assert.equal(helper.exit_code, 0, JSON.stringify(helper));
      assert.match(helper.stdout as string, /bwrap/);
      assert.equal(await Deno.readTextFile(`${ws}/helper.txt`), "ok\n");
      // A command that is not on the run list is refused by corral inside the jail.
      const other = await registry.call("HelperRun", { command: "python3", args: ["-c", "1"] });
      assert.equal(other.success, false);
      assert.match(
        other.error!,
        /permission denied: command "python3" is not on this tool's run list/,
      );
    } finally {
      await registry.close();
    }
  },
});

Deno.test("the host's environment never reaches a tool's subprocess; listed names do", async () => {
  const { ws } = await tempLayout();
  await Deno.writeTextFile(
    `${ws}/permissions.json`,
    JSON.stringify({ toolsets: { system: { run: ["bash"], env: ["CORRAL_TEST_PASSED"] } } }),
  );
  const out = await runCli(
    [
      "call",
      "RunBashCode",
      "-x",
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

Deno.test("corral list marks tools that start processes as jailed or unjailed", async () => {
  const { ws } = await tempLayout();
  await Deno.writeTextFile(
    `${ws}/permissions.json`,
    JSON.stringify({ toolsets: { system: { run: ["bash"], jail: "off" } } }),
  );
  const text = await runCli(["list", "-rx"], { cwd: ws });
  assert.match(text.stdout, /RunBashCode[^\n]*\n[^\n]*jail: NONE \(subprocesses unjailed\)/);
  const json = await runCli(["list", "--json", "-rx"], { cwd: ws });
  const tools = JSON.parse(json.stdout) as Array<{ name: string; jail: string | null }>;
  assert.equal(tools.find((t) => t.name === "RunBashCode")?.jail, "none");
  assert.equal(tools.find((t) => t.name === "ReadFile")?.jail, null);
});
