// No sandbox is shared between two principals (issue 20). Each MCP session,
// stateless caller and the command line gets sandboxes of its own; what a
// session's calls start dies with the session; and within one sandbox no
// subprocess reads or writes the runtime (its memory, its pipes). Attacked
// through the registry and through a real `corral mcp --http`, with a spy
// left running in the background by one session's RunBashCode.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { isTempName } from "../../../core/guard/temp_names.ts";
import { findBwrap } from "../../../core/jail/mod.ts";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import type { SandboxPoolLimits } from "../../../core/registry/sandbox_pool.ts";
import { sandboxInit } from "../../../core/sandbox/sealed_runtime.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { CORRAL_ARGS, FIXTURES, ROOT } from "../../../testing/mod.ts";
import { childEnv, startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";
import { tempLayout } from "../../_helpers.ts";

// Fail closed: a machine without bwrap fails these tests (CI installs it).
if (await findBwrap() === undefined) {
  throw new Error("session_isolation_test: no working bwrap here (install bubblewrap)");
}

const SPY = join(FIXTURES, "session_isolation", "spy.sh");

async function _system(ws: string, sandboxLimits?: SandboxPoolLimits): Promise<Registry> {
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: { system: { run: ["bash", "python3"], read: ["."], write: ["."] } },
    }),
    "test.json",
    ws,
  );
  return await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
    ...(sandboxLimits ? { sandboxLimits } : {}),
  });
}

/** Host processes whose command line holds `marker`. */
function _procsWith(marker: string): number[] {
  const found: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name) || Number(e.name) === Deno.pid) continue;
    try {
      if (Deno.readTextFileSync(`/proc/${e.name}/cmdline`).includes(marker)) {
        found.push(Number(e.name));
      }
    } catch { /* gone */ }
  }
  return found;
}

/** How many `sleep MARKER` processes run (not the shell that started one). */
function _sleeps(marker: string): number {
  return _procsWith(`sleep\0${marker}`).length;
}

/** Wait until no process holds `marker` (false after `ms`). */
async function _gone(marker: string, ms = 15_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (_procsWith(marker).length === 0) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/** A unique number for `sleep`, found in its command line from the host. */
function _marker(): string {
  return `7${Math.floor(Math.random() * 1e9)}.${Math.floor(Math.random() * 1e6)}`;
}

/** A background sleep that outlives the call (its own session, no pipes held). */
function _leave(marker: string): string {
  // "started" only once the sleep has exec'd: before that its command line is bash's.
  return `setsid nohup sleep ${marker} >/dev/null 2>&1 < /dev/null & ` +
    `for i in $(seq 200); do pgrep -xf 'sleep ${marker}' >/dev/null && break; sleep 0.05; done; ` +
    `echo started`;
}

Deno.test("a principal reuses its own sandbox; another principal gets another; ending one kills what its calls started", async () => {
  const { ws } = await tempLayout();
  const registry = await _system(ws);
  const a = _marker(), b = _marker();
  try {
    for (const [who, m] of [["alice", a], ["bob", b]]) {
      const r = await registry.call("RunBashCode", { code: _leave(m) }, { principal: who });
      assert.equal(r.success, true, JSON.stringify(r));
    }
    const pa = (await registry.sandboxFor("RunBashCode", "alice")).pid;
    const pb = (await registry.sandboxFor("RunBashCode", "bob")).pid;
    assert.ok(pa && pb && pa !== pb, `alice ${pa}, bob ${pb}: one sandbox process each`);
    assert.equal((await registry.sandboxFor("RunBashCode", "alice")).starts, 1);
    // Alice's next call runs in her sandbox: it sees her process and not bob's.
    const look = (m: string) => `pgrep -f 'slee[p] ${m}' >/dev/null && echo yes || echo no`;
    const mine = await registry.call("RunBashCode", { code: `${look(a)}; ${look(b)}` }, {
      principal: "alice",
    });
    assert.equal(mine.stdout, "yes\nno\n", JSON.stringify(mine));
    assert.equal((await registry.sandboxFor("RunBashCode", "alice")).pid, pa);
    // The command line (no principal) is a principal of its own.
    const cli = await registry.call("RunBashCode", { code: `${look(a)}; ${look(b)}` });
    assert.equal(cli.stdout, "no\nno\n");
    assert.equal(registry.sandboxes.size, 3);
    // Alice's session ends: her sandbox and her background process are gone, bob's are not.
    assert.equal(_sleeps(a), 1);
    await registry.endPrincipal("alice");
    assert.ok(await _gone(a), "alice's background process outlived her principal");
    assert.equal(_sleeps(b), 1, "bob's process was killed with alice's");
    const again = await registry.call("RunBashCode", { code: look(b) }, { principal: "bob" });
    assert.equal(again.stdout, "yes\n");
  } finally {
    await registry.close();
  }
  assert.ok(await _gone(b), "bob's background process outlived the registry");
});

Deno.test("live sandboxes are bounded (the least recently used idle one goes) and idle ones are reaped", async () => {
  const { ws } = await tempLayout();
  // Idle for longer than the three calls take on a loaded machine: only the bound evicts first.
  const registry = await _system(ws, { max: 2, idleMs: 5000 });
  const marks = [_marker(), _marker(), _marker()];
  try {
    for (let i = 0; i < 3; i++) {
      const r = await registry.call("RunBashCode", { code: _leave(marks[i]) }, {
        principal: `p${i}`,
      });
      assert.equal(r.success, true, JSON.stringify(r));
      assert.ok(registry.sandboxes.size <= 2, `${registry.sandboxes.size} sandboxes live`);
    }
    // p0's sandbox made room for p2's: everything it started is gone.
    assert.ok(await _gone(marks[0]), "the evicted sandbox's process is still running");
    assert.equal(_sleeps(marks[1]) + _sleeps(marks[2]), 2);
    // Unused for the idle time: reaped, with their processes.
    assert.ok(await _gone(marks[1]) && await _gone(marks[2]), "idle sandboxes were not reaped");
    assert.equal(registry.sandboxes.size, 0);
  } finally {
    await registry.close();
  }
});

Deno.test("within one sandbox, a subprocess cannot read or write the runtime: memory, maps, environ, pipes, ptrace", async () => {
  const { ws } = await tempLayout();
  const registry = await _system(ws);
  // The runtime and pid 1 (which holds the sandbox's pipes) against a sleep the
  // same bash started: the same reads succeed on the sleep, so the method works.
  const probe = `
    sleep 30 & s=$!; sleep 0.2
    for p in 1 2 $s; do
      name=$(sed -n 's/^Name:\\t//p' /proc/$p/status)
      m=$(head -c 1 /proc/$p/maps >/dev/null 2>&1 && echo 1 || echo 0)
      e=$(head -c 1 /proc/$p/environ >/dev/null 2>&1 && echo 1 || echo 0)
      a=$(grep -m1 -E '^[0-9a-f]+-[0-9a-f]+ r' /proc/$p/maps 2>/dev/null | cut -d- -f1)
      r=$(dd if=/proc/$p/mem bs=1 count=8 iflag=skip_bytes skip=$((16#\${a:-1000})) 2>/dev/null | wc -c)
      w=$( (printf 'x\\n' > /proc/$p/fd/1) 2>/dev/null && echo 1 || echo 0)
      i=$(timeout 0.3 head -c 1 /proc/$p/fd/0 >/dev/null 2>&1; [ $? = 0 ] && echo 1 || echo 0)
      t=$(python3 -c "
import ctypes; l = ctypes.CDLL(None, use_errno=True)
r = l.ptrace(0x4206, $p, 0, 0); print(1 if r == 0 else 0)
if r == 0: l.ptrace(17, $p, 0, 0)" 2>/dev/null || echo 0)
      echo "$name maps=$m environ=$e mem=$r stdout=$w stdin=$i ptrace=$t"
    done
    kill $s`;
  try {
    const r = await registry.call("RunBashCode", { code: probe, timeout: 30 });
    assert.equal(r.success, true, JSON.stringify(r));
    // (The sleep's stdout is this bash's: the write to it shows as a line "x".)
    const lines = String(r.stdout).trim().split("\n").filter((l) => l !== "x");
    assert.equal(lines.length, 3, String(r.stdout));
    const [init, runtime, sleep] = lines;
    const sh = sandboxInit().split("/").at(-1);
    assert.equal(init, `${sh} maps=0 environ=0 mem=0 stdout=0 stdin=0 ptrace=0`);
    assert.match(runtime, /^deno maps=0 environ=0 mem=0 stdout=0 stdin=0 ptrace=0$/);
    // The control: a process of the tool's own is readable the same way.
    assert.match(sleep, /^sleep maps=1 environ=1 mem=8 /, sleep);
    // The sandbox still answers, with its own runtime.
    const ok = await registry.call("RunBashCode", { code: "echo alive" });
    assert.equal(ok.stdout, "alive\n");
  } finally {
    await registry.close();
  }
});

type CallResult = Awaited<ReturnType<Client["callTool"]>>;

function _result(r: CallResult): Record<string, unknown> {
  return r.structuredContent as Record<string, unknown>;
}

Deno.test("two MCP sessions over HTTP: a spy left by one never sees or forges the other's calls, and dies with its session", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0", "-x"], ws);
  const marker = _marker().replace(".", "");
  const prefix = `B-SECRET-${marker}-`;
  const secret = `${prefix}${crypto.randomUUID().replaceAll("-", "")}`;
  const nonce = `genuine-${crypto.randomUUID()}`;
  const spyDir = join(ws.dir, "spy");
  await Deno.copyFile(SPY, join(ws.dir, "spy.sh"));
  const ta = new StreamableHTTPClientTransport(new URL(corral.url));
  const a = new Client({ name: "session-a", version: "1" });
  const b = new Client({ name: "session-b", version: "1" });
  await a.connect(ta);
  await b.connect(new StreamableHTTPClientTransport(new URL(corral.url)));
  try {
    // Session A leaves the spy running in the background.
    const left = await a.callTool({
      name: "RunBashCode",
      arguments: {
        code: `setsid nohup bash spy.sh ${marker} spy '${prefix}[0-9a-f]{8}' ` +
          `>/dev/null 2>&1 </dev/null & echo started`,
      },
    });
    assert.equal(_result(left).success, true, JSON.stringify(left));
    const rounds = async () => {
      try {
        return (await Deno.readTextFile(join(spyDir, "report"))).trim().split("\n");
      } catch {
        return [];
      }
    };
    while ((await rounds()).length < 2) await new Promise((r) => setTimeout(r, 100));
    // Session B calls with a secret in its arguments; its bash holds it for 3 s.
    const before = (await rounds()).length;
    const call = await b.callTool({
      name: "RunBashCode",
      arguments: { code: `: '${secret}'; sleep 3; echo ${nonce}` },
    });
    const after = await rounds();
    // B's result is its own, not a forged one.
    assert.equal(call.isError, false, JSON.stringify(call));
    assert.equal(_result(call).success, true);
    assert.equal(_result(call).stdout, `${nonce}\n`);
    assert.doesNotMatch(JSON.stringify(call), /FORGED/);
    assert.ok(after.length - before >= 2, `the spy made ${after.length - before} rounds meanwhile`);
    // The spy worked (it read its own memory) and saw no trace of B.
    const last = after.at(-1)!;
    assert.match(last, /self_control=1/, last);
    assert.match(last, /secret=0/, last);
    assert.match(last, /forged=0/, last);
    // It saw its own sandbox's runtime and could neither read nor write it.
    assert.match(last, /denied_deno=1 deno=1$/, last);
    for await (const e of Deno.readDir(spyDir)) {
      // An applier's private folder while it applies what the spy writes (a moment's).
      if (isTempName(e.name)) continue;
      const text = await Deno.readTextFile(join(spyDir, e.name));
      assert.ok(!text.includes(secret), `B's secret reached the spy's ${e.name}`);
    }
    // A's own next call shows nothing of B either.
    const peek = await a.callTool({
      name: "RunBashCode",
      arguments: { code: "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '" },
    });
    assert.ok(!JSON.stringify(peek).includes(secret));
    // A's session is deleted: the spy dies with it; B is still served.
    // (Its subshells carry the same command line: one or more processes.)
    assert.ok(_procsWith(`spy.sh\0${marker}`).length >= 1, "the spy is not running");
    await ta.terminateSession();
    assert.ok(await _gone(`spy.sh\0${marker}`), "the spy outlived its session");
    const still = await b.callTool({ name: "RunBashCode", arguments: { code: "echo ok" } });
    assert.equal(_result(still).stdout, "ok\n");
  } finally {
    await a.close().catch(() => {});
    await b.close();
  }
});

Deno.test("a stateless caller is its bearer token: its requests share one sandbox, gone when corral stops", async () => {
  await using ws = await tempWorkspace();
  const token = `t-${crypto.randomUUID()}`;
  const marker = _marker();
  {
    await using corral = await startHttpCorral(
      ["--http", "127.0.0.1:0", "--stateless", "-x", "--token", token],
      ws,
    );
    const call = async (code: string, auth = `Bearer ${token}`) => {
      const r = await fetch(corral.url, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          Accept: "application/json, text/event-stream",
          Authorization: auth,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "RunBashCode", arguments: { code } },
        }),
      });
      return { status: r.status, body: await r.text() };
    };
    const left = await call(_leave(marker));
    assert.equal(left.status, 200, left.body);
    assert.match(left.body, /started/);
    // The same caller's next request runs where its process is.
    const seen = await call(`pgrep -f 'slee[p] ${marker}' >/dev/null && echo yes-seen || echo no`);
    assert.match(seen.body, /yes-seen/, seen.body);
    // Another token is no caller at all (401), and never reaches that sandbox.
    const other = await call("echo hi", "Bearer not-the-token");
    assert.equal(other.status, 401);
    assert.equal(_sleeps(marker), 1);
  }
  // corral stopped (SIGTERM): its sandboxes and all they started are gone.
  assert.ok(await _gone(marker), "a stateless caller's process outlived corral");
});

Deno.test("a session that expires (--session-idle) or a stdio client that goes takes its processes along", async () => {
  await using ws = await tempWorkspace();
  const idle = _marker(), stdio = _marker(), other = _marker();
  {
    await using corral = await startHttpCorral(
      ["--http", "127.0.0.1:0", "-x", "--session-idle", "2"],
      ws,
    );
    const quiet = new Client({ name: "quiet", version: "1" });
    const busy = new Client({ name: "busy", version: "1" });
    await quiet.connect(new StreamableHTTPClientTransport(new URL(corral.url)));
    await busy.connect(new StreamableHTTPClientTransport(new URL(corral.url)));
    for (const [c, m] of [[quiet, idle], [busy, other]] as const) {
      const r = await c.callTool({ name: "RunBashCode", arguments: { code: _leave(m) } });
      assert.equal(_result(r).success, true, JSON.stringify(r));
    }
    // The quiet session says nothing more and expires; the busy one keeps calling.
    const until = Date.now() + 15_000;
    while (_procsWith(idle).length && Date.now() < until) {
      await busy.callTool({ name: "RunBashCode", arguments: { code: "true" } });
      await new Promise((r) => setTimeout(r, 300));
    }
    assert.equal(_procsWith(idle).length, 0, "an expired session's process is still running");
    assert.equal(_sleeps(other), 1, "a live session's process was killed");
    await quiet.close().catch(() => {});
    await busy.close();
  }
  // Over stdio: the client goes, and so does what its calls started.
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws.dir, "-r", "-w", "-x"],
    env: childEnv(ws.cache),
    cwd: ROOT,
    stderr: "pipe",
  });
  const client = new Client({ name: "stdio", version: "1" });
  await client.connect(transport);
  const r = await client.callTool({ name: "RunBashCode", arguments: { code: _leave(stdio) } });
  assert.equal(_result(r).success, true, JSON.stringify(r));
  assert.equal(_sleeps(stdio), 1);
  await client.close();
  assert.ok(await _gone(stdio), "a stdio client's process outlived it");
});

Deno.test("no descriptor corral inherited reaches a sandbox: a tool cannot write or read through it", async () => {
  await using ws = await tempWorkspace();
  const outside = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "corral-fds-" });
  const canary = join(outside, "canary.txt");
  const secret = join(outside, "secret.txt");
  const hidden = `SECRET-${crypto.randomUUID()}`;
  await Deno.writeTextFile(canary, "CANARY\n");
  await Deno.writeTextFile(secret, hidden);
  // Every descriptor but stdin, stdout and stderr: write to it, read from it.
  const code = 'for f in /proc/self/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] || continue; ' +
    'echo pwned >&$n 2>/dev/null && echo "wrote $n"; head -c 100 <&$n 2>/dev/null; done; echo done';
  try {
    const shell = [
      `exec 7>>'${canary}' 8<'${secret}' 251>>'${canary}'`,
      'exec "$@"',
    ].join("; ");
    const out = await new Deno.Command("/bin/bash", {
      args: [
        "-c",
        shell,
        "corral",
        Deno.execPath(),
        ...CORRAL_ARGS,
        "call",
        "RunBashCode",
        "--workspace",
        ws.dir,
        "--args",
        JSON.stringify({ code }),
      ],
      env: childEnv(ws.cache),
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, text + new TextDecoder().decode(out.stderr));
    assert.match(text, /done/);
    assert.equal(
      await Deno.readTextFile(canary),
      "CANARY\n",
      "a tool wrote through an inherited fd",
    );
    assert.ok(!text.includes(hidden), "a tool read through an inherited fd");
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});
