// Attacks on the sandbox namespace (issue: an agent cannot widen its own
// sandbox). Each test tries the forbidden thing through ordinary tool calls
// and checks that it did not happen: the trust base stays as it was, races
// cannot leave the grant, x reads only its r grant, limits hold, and a
// plugin changed after discovery does not run.
import assert from "node:assert/strict";
import { join } from "node:path";
import { parsePolicy } from "../../../core/config/policy.ts";
import { findBwrap } from "../../../core/jail/mod.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { INSTALL_DIR } from "../../../core/config/install_dir.ts";
import { ROOT } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

if (await findBwrap() === undefined) {
  throw new Error("namespace_test: no working bwrap here (install bubblewrap)");
}

function _rand(): string {
  return crypto.randomUUID().slice(0, 8);
}

const _QUIET = () => new Reporter({ sink: () => {}, color: false });

/** A registry whose system toolset has `system` (plus read and write of the workspace). */
async function _system(system: Record<string, unknown>) {
  const { ws } = await tempLayout();
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { system: { read: ["."], write: ["."], ...system } } }),
    "t.json",
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: _QUIET(),
  });
  return { ws, registry };
}

/**
 * A workspace holding everything a careless operator could put there: the
 * policy and config in use, the audit log, corral's cache and a plugin
 * directory. The files and system toolsets may write the whole workspace.
 */
async function _exposed(extra: Record<string, unknown> = {}) {
  const { ws, base, outside } = await tempLayout();
  const policyFile = `${ws}/policy.json`;
  const policyText = JSON.stringify({
    toolsets: {
      files: { read: ["."], write: ["."] },
      system: { run: ["bash", "python3"], read: ["."], write: ["."] },
    },
    // Confirmation would stop these before the sandbox: let every attempt reach it.
    tools: {
      DeleteFile: { confirm: "always" },
      CreateFile: { confirm: "always" },
      MoveFile: { confirm: "always" },
    },
    ...extra,
  });
  await Deno.writeTextFile(policyFile, policyText);
  const configFile = `${ws}/corral.json`;
  const configText = JSON.stringify({ tool_dirs: ["plugins"], services: { k: "v" } });
  await Deno.writeTextFile(configFile, configText);
  await Deno.mkdir(`${ws}/plugins`);
  const pluginText = `export const TOOL_CONFIG = { name: "Hi", description: "hi", ` +
    `function: () => ({ success: true }) };\n`;
  await Deno.writeTextFile(`${ws}/plugins/hi.ts`, pluginText);
  const cacheDir = `${ws}/.cache`;
  const auditPath = `${ws}/audit.jsonl`;
  const policy = parsePolicy(policyText, policyFile, ws);
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir,
    auditPath,
    reporter: _QUIET(),
    trusted: [
      { path: configFile, what: "the config file", secret: true },
      { path: `${ws}/plugins`, what: "a plugin directory" },
    ],
    sources: [{
      id: "plugin:plugins/hi",
      kind: "plugin",
      modules: [`${ws}/plugins/hi.ts`],
      policy: policy.plugin("plugin:plugins/hi", "hi"),
    }],
  });
  const snapshot = async () => {
    const files: Record<string, string> = {};
    for (const f of [policyFile, configFile, `${ws}/plugins/hi.ts`]) {
      files[f] = await Deno.readTextFile(f);
    }
    const plugins = (await Array.fromAsync(Deno.readDir(`${ws}/plugins`))).map((e) => e.name);
    let cache: string[] = [];
    try {
      cache = (await Array.fromAsync(Deno.readDir(cacheDir))).map((e) => e.name).sort();
    } catch { /* none */ }
    return { files, plugins: plugins.sort(), cache };
  };
  return { ws, base, outside, registry, policyFile, configFile, auditPath, cacheDir, snapshot };
}

Deno.test("the trust base cannot be rewritten through CreateFile, ReplaceTextInFile, MoveFile or jailed bash", async () => {
  const t = await _exposed();
  const { registry, ws } = t;
  try {
    const before = await t.snapshot();
    const mainBefore = await Deno.readTextFile(`${ROOT}main.ts`);
    const loose = { ...JSON.parse(await Deno.readTextFile(t.policyFile)), toolsets: {} };
    const attempts: Array<[string, Record<string, unknown>]> = [
      ["CreateFile", { filepath: "policy.json", content: JSON.stringify(loose), overwrite: true }],
      ["ReplaceTextInFile", { filepath: "corral.json", search: "plugins", replace: "/tmp" }],
      ["ReplaceTextInFile", { filepath: "policy.json", search: '"."', replace: '"/"' }],
      ["MoveFile", { source: "policy.json", destination: "moved.json" }],
      ["MoveFile", { source: "plugins/hi.ts", destination: "hi.ts" }],
      ["MoveFile", { source: "plugins", destination: "plugins2" }],
      ["CreateFile", { filepath: "plugins/evil.ts", content: "export const TOOL_CONFIG = {};" }],
      ["CreateFile", { filepath: "audit.jsonl", content: "", overwrite: true }],
      ["CreateFile", { filepath: ".cache/bwrap.json", content: '{"ok":false}', overwrite: true }],
      ["DeleteFile", { filepath: "policy.json" }],
      ["DeleteFile", { filepath: "audit.jsonl" }],
      ["CreateFile", { filepath: `${INSTALL_DIR}/main.ts`, content: "x", overwrite: true }],
    ];
    // One call first, so the audit log has a line to lose.
    assert.equal((await registry.call("ListFiles", { path: "." })).success, true);
    for (const [tool, args] of attempts) {
      const res = await registry.call(tool, args);
      assert.equal(res.success, false, `${tool} ${JSON.stringify(args)} succeeded`);
    }
    const bash = await registry.call("RunBashCode", {
      code: [
        "echo '{}' > policy.json",
        "echo '{}' > corral.json",
        "rm -f plugins/hi.ts; echo bad > plugins/evil.ts",
        "mv plugins plugins.old",
        ": > audit.jsonl",
        "rm -rf .cache; mkdir -p .cache; echo '{}' > .cache/bwrap.json",
        `echo x >> ${INSTALL_DIR}/main.ts`,
        `echo x > ${INSTALL_DIR}/core/evil.ts`,
        "cat corral.json",
        "true",
      ].join("; "),
    });
    assert.equal(bash.success, true, bash.error);
    assert.doesNotMatch(bash.stdout as string, /services/, "the config is not even readable");
    const after = await t.snapshot();
    assert.deepEqual(after.files, before.files);
    assert.deepEqual(after.plugins, before.plugins);
    assert.equal(await Deno.readTextFile(`${ROOT}main.ts`), mainBefore);
    await assert.rejects(Deno.stat(`${INSTALL_DIR}/core/evil.ts`), Deno.errors.NotFound);
    await assert.rejects(Deno.stat(`${ws}/moved.json`), Deno.errors.NotFound);
    const audit = (await Deno.readTextFile(t.auditPath)).trim().split("\n");
    assert.ok(audit.length >= attempts.length + 1, `audit lines kept: ${audit.length}`);
    assert.equal(JSON.parse(audit[0]).tool, "ListFiles");
  } finally {
    await registry.close();
  }
});

Deno.test("a write grant inside the trust base refuses the start, naming both paths", async () => {
  const { ws } = await tempLayout();
  await Deno.mkdir(`${ws}/plugins`);
  await Deno.writeTextFile(
    `${ws}/plugins/a.ts`,
    `export const TOOL_CONFIG = { name: "A", description: "a", permissions: "w", ` +
      `function: () => ({ success: true }) };\n`,
  );
  await Deno.writeTextFile(`${ws}/plugins/b.ts`, `export const TOOLS = [];\n`);
  const policy = parsePolicy(
    JSON.stringify({ plugins: { default: { write: ["plugins"] } } }),
    "test.json",
    ws,
  );
  const sources = ["a", "b"].map((s) => ({
    id: `plugin:plugins/${s}`,
    kind: "plugin" as const,
    modules: [`${ws}/plugins/${s}.ts`],
    policy: policy.plugin(`plugin:plugins/${s}`, s),
  }));
  await assert.rejects(
    Registry.create({
      workspace: ws,
      policy,
      noBuiltins: true,
      cacheDir: null,
      reporter: _QUIET(),
      sources,
    }),
    (err: Error) =>
      err.name === "ConfigError" &&
      err.message.includes(`plugins.default.write "${ws}/plugins"`) &&
      err.message.includes(`a plugin directory "${ws}/plugins"`),
  );
  // The same for corral's own folder, and for Deno's cache.
  for (const inside of [join(INSTALL_DIR, "core"), join(INSTALL_DIR, "plugins")]) {
    const p = parsePolicy(
      JSON.stringify({ toolsets: { files: { read: ["."], write: [inside] } } }),
      "t.json",
      ws,
    );
    await assert.rejects(
      Registry.create({ workspace: ws, policy: p, cacheDir: null, reporter: _QUIET() }),
      /lies inside corral's install folder/,
    );
  }
  assert.deepEqual(
    (await Array.fromAsync(Deno.readDir(`${ws}/plugins`))).map((e) => e.name).sort(),
    ["a.ts", "b.ts"],
  );
});

Deno.test("without the namespace (an opt-out) a write grant holding the trust base refuses the start", async () => {
  const { ws } = await tempLayout();
  const audit = `${ws}/audit.jsonl`;
  for (const files of [{ isolation: "worker" }, { jail: "off" }]) {
    const p = parsePolicy(
      JSON.stringify({ toolsets: { files: { read: ["."], write: ["."], ...files } } }),
      "t.json",
      ws,
    );
    await assert.rejects(
      Registry.create({
        workspace: ws,
        policy: p,
        cacheDir: null,
        auditPath: audit,
        reporter: _QUIET(),
      }),
      (err: Error) =>
        err.message.includes(`holds the audit log "${audit}"`) &&
        err.message.includes("runs without the namespace"),
    );
  }
});

Deno.test("a rename-exchange race cannot make CreateFile, ReadFile or SearchText leave the workspace", async () => {
  const { ws, outside, registry } = await _exposed();
  const canary = `canary-${_rand()}`;
  await Deno.writeTextFile(`${outside}/secret.txt`, canary);
  await Deno.mkdir(`${ws}/d`);
  await Deno.writeTextFile(`${ws}/d/secret.txt`, "inside");
  await Deno.symlink(outside, `${ws}/link`);
  // An x tool swaps d and link (renameat2 RENAME_EXCHANGE) in a tight loop.
  const racer = registry.call("RunPythonCode", {
    timeout: 20,
    code: [
      "import ctypes, os, time",
      "libc = ctypes.CDLL(None, use_errno=True)",
      "AT = -100",
      "end = time.time() + 8",
      "n = 0",
      "while time.time() < end:",
      "    libc.renameat2(AT, b'd', AT, b'link', 2)",
      "    n += 1",
      "print(n)",
    ].join("\n"),
  });
  let attempts = 0;
  let leaked = "";
  const deadline = Date.now() + 7000;
  while (Date.now() < deadline) {
    attempts++;
    const results = await Promise.all([
      registry.call("CreateFile", {
        filepath: `d/escape-${attempts}.txt`,
        content: "x",
      }),
      registry.call("ReadFile", { filepath: "d/secret.txt" }),
      registry.call("SearchText", { pattern: "canary", path: "d" }),
      registry.call("ReadFile", { filepath: "link/secret.txt" }),
    ]);
    for (const r of results) {
      if (JSON.stringify(r).includes(canary)) leaked = JSON.stringify(r);
    }
  }
  const raced = await racer;
  assert.equal(raced.success, true, raced.error);
  assert.ok(Number(String(raced.stdout).trim()) > 1000, `the racer swapped: ${raced.stdout}`);
  assert.ok(attempts >= 20, `attempts: ${attempts}`);
  assert.equal(leaked, "", "no result carried the canary");
  assert.deepEqual(
    (await Array.fromAsync(Deno.readDir(outside))).map((e) => e.name),
    ["secret.txt"],
    "nothing was written outside the workspace",
  );
  await registry.close();
});

Deno.test("a plugin file changed between discovery and its first call does not run", async () => {
  const { ws, base } = await tempLayout();
  const dir = `${base}/plugins`;
  await Deno.mkdir(dir);
  const file = `${dir}/swap.ts`;
  await Deno.writeTextFile(
    file,
    `export const TOOL_CONFIG = { name: "Swap", description: "s", ` +
      `function: () => ({ success: true, v: "checked" }) };\n`,
  );
  const policy = parsePolicy("{}", "t.json", ws);
  const registry = await Registry.create({
    workspace: ws,
    policy,
    noBuiltins: true,
    cacheDir: null,
    reporter: _QUIET(),
    sources: [{
      id: "plugin:p/swap",
      kind: "plugin",
      modules: [file],
      policy: policy.plugin("plugin:p/swap", "swap"),
    }],
  });
  try {
    assert.equal(registry.get("Swap")?.status, "loaded");
    await Deno.writeTextFile(
      file,
      `import "./other.ts";\nexport const TOOL_CONFIG = { name: "Swap", description: "s", ` +
        `function: () => ({ success: true, v: "swapped" }) };\n`,
    );
    await Deno.writeTextFile(`${dir}/other.ts`, `export {};\n`);
    const res = await registry.call("Swap", {});
    assert.equal(res.success, false);
    assert.match(res.error!, /changed since corral checked it at discovery/);
    assert.doesNotMatch(JSON.stringify(res), /swapped/);
  } finally {
    await registry.close();
  }
});

Deno.test("jailed bash reads neither HOME, another folder, /etc/shadow, the host's env, nor a unix socket outside the grant", async () => {
  const { ws, registry } = await _exposed();
  const home = Deno.env.get("HOME") ?? "/root";
  const canary = `canary-${_rand()}`;
  const homeFile = `${home}/.corral-canary-${_rand()}`;
  const otherDir = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "corral-other-" });
  const sockDir = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "corral-sock-" });
  await Deno.writeTextFile(homeFile, canary);
  await Deno.writeTextFile(`${otherDir}/secret.txt`, canary);
  const listener = Deno.listen({ transport: "unix", path: `${sockDir}/s` });
  let connected = 0;
  (async () => {
    for await (const c of listener) {
      connected++;
      c.close();
    }
  })();
  Deno.env.set("CORRAL_HOST_SECRET", canary);
  try {
    const res = await registry.call("RunBashCode", {
      code: [
        `cat ${homeFile}`,
        `cat ${otherDir}/secret.txt`,
        "cat /etc/shadow",
        "ls /home /root /run /sys",
        "cat /proc/1/environ /proc/$PPID/environ",
        `python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('${sockDir}/s'); print('CONNECTED')"`,
        `ls ${ROOT}`,
        "true",
      ].join("; "),
    });
    assert.equal(res.success, true, res.error);
    const all = JSON.stringify(res);
    assert.ok(!all.includes(canary), `a canary leaked: ${all}`);
    assert.doesNotMatch(res.stdout as string, /CONNECTED/);
    assert.match(res.stderr as string, /\/etc\/shadow: No such file/);
    assert.equal(connected, 0);
  } finally {
    Deno.env.delete("CORRAL_HOST_SECRET");
    listener.close();
    await registry.close();
    await Deno.remove(homeFile);
    await Deno.remove(otherDir, { recursive: true });
    await Deno.remove(sockDir, { recursive: true });
    await Deno.remove(ws, { recursive: true }).catch(() => {});
  }
});

Deno.test("a bounded fork bomb hits the sandbox's process limit and the host keeps serving", async () => {
  const { registry } = await _system({ run: ["python3", "bash"], max_processes: 48 });
  const marker = `corral-fork-${_rand()}`;
  try {
    // A fork that fails fails at once (bash would retry each for 15 s): 300 tries, every child
    // holding the marker in its command line, counted by the one process that made them.
    const res = await registry.call("RunPythonCode", {
      timeout: 60,
      code: [
        `# ${marker}`,
        "import os, signal, time",
        "kids, failed = [], 0",
        "for i in range(300):",
        "    try:",
        "        pid = os.fork()",
        "    except OSError:",
        "        failed += 1",
        "        continue",
        "    if pid == 0:",
        "        time.sleep(30)",
        "        os._exit(0)",
        "    kids.append(pid)",
        "print(f'running={len(kids)} failed={failed}', flush=True)",
        "for k in kids: os.kill(k, signal.SIGKILL)",
        "for k in kids: os.waitpid(k, 0)",
      ].join("\n"),
    });
    // Either the bomb ran out of processes inside, or the sandbox was stopped at its limit.
    if (res.success) {
      const running = Number(/running=(\d+)/.exec(String(res.stdout))?.[1] ?? "-1");
      const failed = Number(/failed=(\d+)/.exec(String(res.stdout))?.[1] ?? "-1");
      assert.ok(running >= 0 && running < 48, `processes at once: ${running} (${res.stderr})`);
      assert.equal(running + failed, 300, String(res.stdout));
    } else {
      assert.match(res.error!, /hit its process limit \(48 processes and threads\)/);
    }
    // Nothing of the bomb is left on the host.
    await new Promise((r) => setTimeout(r, 300));
    const left: string[] = [];
    for (const e of Deno.readDirSync("/proc")) {
      try {
        if (Deno.readTextFileSync(`/proc/${e.name}/cmdline`).includes(marker)) left.push(e.name);
      } catch { /* not a process */ }
    }
    assert.deepEqual(left, [], "no bomb process survived");
    // The host still serves calls.
    const after = await registry.call("RunBashCode", { code: "echo alive" });
    assert.equal(after.stdout, "alive\n");
  } finally {
    await registry.close();
  }
});

/** Run `tests/fixtures/host_probe.ts` (a host in its own process) and return what it measured. */
async function _probe(ws: string, call: Record<string, unknown>) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}tests/fixtures/host_probe.ts`, ws, JSON.stringify(call)],
    stdout: "piped",
    stderr: "piped",
    env: { CORRAL_CACHE_DIR: "" },
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(text) as {
    result: Record<string, unknown>;
    seconds: number;
    rssBeforeMb: number;
    rssAfterMb: number;
    idleCpuMs: number;
    sandboxAlive: boolean;
  };
}

Deno.test("a 3 GB sparse file, a FIFO and a catastrophic regex cost the host neither memory nor CPU", async () => {
  const { ws } = await tempLayout();
  const big = `${ws}/big.bin`;
  const f = await Deno.open(big, { create: true, write: true });
  await f.truncate(3 * 1024 ** 3);
  f.close();
  const mk = await new Deno.Command("mkfifo", { args: [`${ws}/fifo`] }).output();
  assert.equal(mk.code, 0);
  await Deno.writeTextFile(`${ws}/evil.txt`, "a".repeat(40) + "!\n");

  const sparse = await _probe(ws, { tool: "WordCount", args: { filepath: "big.bin" } });
  assert.equal(sparse.result.success, false);
  assert.match(String(sparse.result.error), /too large/);
  assert.ok(sparse.rssAfterMb - sparse.rssBeforeMb < 150, JSON.stringify(sparse));

  const fifo = await _probe(ws, { tool: "ReadFile", args: { filepath: "fifo" } });
  assert.equal(fifo.result.success, false);
  assert.match(String(fifo.result.error), /not a regular file/);
  assert.ok(fifo.seconds < 10, `the FIFO held the call ${fifo.seconds} s`);

  const regex = await _probe(ws, {
    tool: "SearchText",
    args: { pattern: "^(a+)+$", path: "evil.txt" },
    timeoutMs: 1500,
  });
  assert.equal(regex.result.success, false);
  assert.equal(regex.result.timed_out, true);
  assert.equal(regex.sandboxAlive, false, "the sandbox that ran the regex is gone");
  for (const m of [sparse, fifo, regex]) {
    assert.ok(m.idleCpuMs < 400, `the host burned ${m.idleCpuMs} ms of CPU in 1 s after a call`);
  }
});

Deno.test("a process that allocates past the sandbox's memory limit is killed, not the host", async () => {
  const { registry } = await _system({ run: ["python3"], memory_mb: 64 });
  try {
    // 64 MB for V8 plus 256 MB for the rest: a 1.5 GB allocation cannot fit.
    const res = await registry.call("RunPythonCode", {
      code:
        "a = bytearray(1536 * 1024 * 1024)\nfor i in range(0, len(a), 4096): a[i] = 1\nprint('fit')",
      timeout: 30,
    });
    assert.doesNotMatch(String(res.stdout ?? ""), /fit/, JSON.stringify(res));
    // Killed by the cgroup's OOM killer (SIGKILL), not a MemoryError inside Python.
    assert.equal(res.exit_code, 137, JSON.stringify(res));
    const after = await registry.call("RunPythonCode", { code: "print('alive')" });
    assert.equal(after.stdout, "alive\n");
  } finally {
    await registry.close();
  }
});

Deno.test("corral list says which process limits are in force; a writable cgroup is used", async () => {
  const { ws } = await tempLayout();
  const res = await runCli(["list", "--workspace", ws, "-r"]);
  assert.equal(res.code, 0, res.stderr);
  const line = /process limits: (.*)/.exec(res.stdout)?.[1] ?? "";
  assert.match(line, /^(cgroup v2|cgroup v1|rlimits)/);
  // This test runs with -A: if it can make a cgroup, the host (without -A) must use one too.
  let writable = false;
  for (const dir of ["/sys/fs/cgroup/pids", "/sys/fs/cgroup"]) {
    try {
      const probe = `${dir}/corral-test-${_rand()}`;
      Deno.mkdirSync(probe);
      Deno.removeSync(probe);
      writable = true;
      break;
    } catch { /* not writable */ }
  }
  if (writable) assert.match(line, /^cgroup/);
});

Deno.test("through the CLI, a configured plugin directory that does not exist yet cannot be created by a tool", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(
    `${base}/corral.json`,
    JSON.stringify({ tool_dirs: [`${ws}/tools`], services: { x: { token: "tok-123" } } }),
  );
  const res = await runCli([
    "call",
    "RunBashCode",
    "--workspace",
    ws,
    "--config",
    `${base}/corral.json`,
    "--args",
    JSON.stringify({
      code:
        `mkdir -p tools; echo 'export const TOOLS = [];' > tools/evil.ts; cat ${base}/corral.json`,
    }),
  ]);
  assert.ok(!res.stdout.includes("tok-123"), "the config (and its secret) is not readable");
  await assert.rejects(Deno.stat(`${ws}/tools/evil.ts`), Deno.errors.NotFound);
});
