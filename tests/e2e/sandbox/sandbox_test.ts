import assert from "node:assert/strict";
import type { Isolation } from "../../../core/config/policy.ts";
import { fixtureRegistry } from "../../../testing/mod.ts";
import { tempLayout } from "../../_helpers.ts";

const MODES: Isolation[] = ["worker", "process"];
const MISBEHAVING = "sandbox/misbehaving_tools.ts";

function _serve(): { port: number; close: () => Promise<void> } {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("pong"),
  );
  return { port: server.addr.port, close: () => server.shutdown() };
}

for (const isolation of MODES) {
  Deno.test(`permission matrix (${isolation}): exactly the granted operations succeed`, async () => {
    const { ws, outside } = await tempLayout();
    await Deno.writeTextFile(`${ws}/inside.txt`, "in");
    await Deno.writeTextFile(`${outside}/secret.txt`, "secret");
    const allowed = _serve();
    const other = _serve();
    const { registry } = await fixtureRegistry(["sandbox/probe_tools.ts"], {
      read: ["."],
      write: ["."],
      run: ["echo"],
      net: [`127.0.0.1:${allowed.port}`],
      isolation,
    }, ws);
    try {
      const tools = registry.loaded();
      assert.equal(tools.length, 16, "every letter combination loads");
      for (const tool of tools) {
        const letters = tool.permissions;
        const res = await registry.call(tool.name, {
          inside_file: `${ws}/inside.txt`,
          outside_file: `${outside}/secret.txt`,
          inside_dir: ws,
          outside_dir: outside,
          command: "echo",
          other_command: "ls",
          host: `127.0.0.1:${allowed.port}`,
          other_host: `127.0.0.1:${other.port}`,
        });
        assert.equal(res.success, true, `${tool.name}: ${res.error}`);
        const ops = res.ops as Record<string, string>;
        const expect = {
          read_inside: letters.includes("r"),
          read_outside: false,
          write_inside: letters.includes("w"),
          write_outside: false,
          run_allowed: letters.includes("x"),
          run_other: false,
          net_allowed: letters.includes("n"),
          net_other: false,
          env: false,
          sys: false,
          ffi: false,
        };
        for (const [op, ok] of Object.entries(expect)) {
          if (ok) assert.equal(ops[op], "ok", `${tool.name} ${op}`);
          else {assert.match(
              ops[op],
              /^denied:(NotCapable|NotFound)$/,
              `${tool.name} ${op}: ${ops[op]}`,
            );}
        }
        await assert.rejects(Deno.stat(`${outside}/probe.txt`), Deno.errors.NotFound);
      }
      assert.deepEqual(
        [...(await Array.fromAsync(Deno.readDir(outside)))].map((e) => e.name),
        ["secret.txt"],
        "no file appears outside the workspace",
      );
    } finally {
      await registry.close();
      await allowed.close();
      await other.close();
    }
  });

  Deno.test(`a tool that calls Deno.exit fails only its own call (${isolation})`, async () => {
    const { ws } = await tempLayout();
    const { registry } = await fixtureRegistry([MISBEHAVING], { isolation }, ws);
    try {
      const res = await registry.call("Exit", {});
      assert.equal(res.success, false);
      assert.match(String(res.error), /Deno\.exit\(3\) is not allowed/);
      const echo = await registry.call("Echo", { value: 1 });
      assert.deepEqual(echo, { success: true, value: 1 });
    } finally {
      await registry.close();
    }
  });

  Deno.test(`an unhandled rejection does not break the sandbox (${isolation})`, async () => {
    const { ws } = await tempLayout();
    const { registry } = await fixtureRegistry([MISBEHAVING], { isolation }, ws);
    try {
      assert.equal((await registry.call("Reject", {})).success, true);
      await new Promise((r) => setTimeout(r, 50));
      const echo = await registry.call("Echo", { value: "still here" });
      assert.deepEqual(echo, { success: true, value: "still here" });
      const sb = await registry.sandboxFor("Echo");
      assert.equal(sb.starts, 1, "the same sandbox kept serving");
    } finally {
      await registry.close();
    }
  });

  Deno.test(`a top-level throw skips only its own module (${isolation})`, async () => {
    const { ws } = await tempLayout();
    const { registry, lines } = await fixtureRegistry(
      ["sandbox/top_level_throw.ts", MISBEHAVING],
      { isolation },
      ws,
    );
    try {
      assert.equal(registry.problems.length, 1);
      assert.match(
        registry.problems[0].message,
        /top_level_throw\.ts: import failed: .*on purpose/,
      );
      assert.ok(lines.some((l) => l.includes("top_level_throw.ts")), "warned on stderr");
      assert.deepEqual(await registry.call("Echo", { value: 2 }), { success: true, value: 2 });
    } finally {
      await registry.close();
    }
  });

  Deno.test(`forged protocol messages are ignored (${isolation})`, async () => {
    const { ws } = await tempLayout();
    const { registry, lines } = await fixtureRegistry([MISBEHAVING], { isolation }, ws);
    try {
      const slow = registry.call("Echo", { value: "real", delay_ms: 300 });
      const forge = await registry.call("Forge", {});
      assert.equal(forge.success, true);
      assert.equal(forge.posted, "refused", "tool code cannot post to the host");
      const res = await slow;
      assert.deepEqual(
        res,
        { success: true, value: "real" },
        "the pending call got its real result",
      );
      assert.equal((res as Record<string, unknown>).forged, undefined);
      if (isolation === "process") {
        // The forged lines did reach the host's reader, which took them for output.
        assert.ok(lines.some((l) => l.includes('"forged":true')), "forged lines were read as logs");
      }
    } finally {
      await registry.close();
    }
  });

  Deno.test(`tool code that replaces built-ins never sees the frame token (${isolation})`, async () => {
    const { ws } = await tempLayout();
    const { registry } = await fixtureRegistry([MISBEHAVING], { isolation }, ws);
    try {
      // A victim waits while the thief watches every other call answer, then forges.
      const victim = registry.call("Echo", { value: "real", delay_ms: 1500 });
      const thief = registry.call("StealToken", { watch_ms: 600 });
      await new Promise((r) => setTimeout(r, 100));
      for (let i = 0; i < 5; i++) {
        assert.deepEqual(await registry.call("Echo", { value: i }), { success: true, value: i });
      }
      const stolen = await thief;
      assert.equal(stolen.success, true, JSON.stringify(stolen));
      assert.equal(stolen.seen, 0, "no frame token was seen by tool code");
      assert.deepEqual(await victim, { success: true, value: "real" });
    } finally {
      await registry.close();
    }
  });

  Deno.test(`each call's output is its own, alone and overlapping (${isolation})`, async () => {
    const { ws } = await tempLayout();
    const { registry } = await fixtureRegistry([MISBEHAVING], { isolation }, ws);
    try {
      // First, on a fresh sandbox: what a finished call left behind is never the next call's
      // (another client's)...
      const late: string[] = [];
      const gone = await registry.call("Lingering", { secret: "hunter2", after_ms: 150 }, {
        onLog: (t) => late.push(t),
      });
      assert.equal(gone.success, true);
      const next: string[] = [];
      assert.equal(
        (await registry.call("Chatty", { tag: "d", delay_ms: 500 }, { onLog: (t) => next.push(t) }))
          .success,
        true,
      );
      assert.deepEqual(next, ["d: start", "d: timer", "d: end"]);
      assert.ok(!late.concat(next).some((t) => t.includes("hunter2")), JSON.stringify(next));
      // ...then calls that overlap.
      const logs: Record<string, string[]> = { a: [], b: [], c: [] };
      const call = (tag: string, delay_ms: number) =>
        registry.call("Chatty", { tag, delay_ms }, { onLog: (t) => logs[tag].push(t) });
      // A runs alone at first; B and C overlap it.
      const a = call("a", 600);
      await new Promise((r) => setTimeout(r, 150));
      const [b, c] = await Promise.all([call("b", 300), call("c", 200)]);
      assert.equal((await a).success, true);
      assert.ok(b.success && c.success);
      for (const tag of ["a", "b", "c"]) {
        assert.deepEqual(logs[tag], [`${tag}: start`, `${tag}: timer`, `${tag}: end`], tag);
      }
    } finally {
      await registry.close();
    }
  });

  Deno.test(`a malformed result from the sandbox is a failure, never a throw (${isolation})`, async () => {
    const { ws } = await tempLayout();
    const { registry } = await fixtureRegistry([MISBEHAVING], { isolation }, ws);
    try {
      const r = await registry.call("NullResult", {});
      if (isolation === "process") {
        assert.equal(r.success, false, JSON.stringify(r));
        assert.match(String(r.error), /malformed result from sandbox/);
      } else {
        // A worker's answer is a structured clone: no JSON, so the result arrives intact.
        assert.equal(r.success, true, JSON.stringify(r));
      }
    } finally {
      await registry.close();
    }
  });

  Deno.test(`Deno.stdout writes become the call's log and stdin is closed (${isolation})`, async () => {
    const { ws } = await tempLayout();
    const { registry } = await fixtureRegistry([MISBEHAVING], { isolation }, ws);
    try {
      const logs: string[] = [];
      const res = await registry.call("Stdio", {}, { onLog: (t) => logs.push(t) });
      assert.equal(res.success, true);
      assert.match(String(res.stdin), /^refused: stdin is not available to tool code/);
      assert.deepEqual(logs, ["written to stdout", "written to stderr"]);
    } finally {
      await registry.close();
    }
  });

  Deno.test(`a result over max_output_bytes is cut with a marker (${isolation})`, async () => {
    const { ws } = await tempLayout();
    const { registry } = await fixtureRegistry([MISBEHAVING], {
      isolation,
      max_output_bytes: 10_000,
    }, ws);
    try {
      const res = await registry.call("Big", { bytes: 200_000 });
      assert.equal(res.truncated, true);
      assert.match(String(res.output), /truncated: result was \d+ bytes, limit 10000/);
      assert.ok(JSON.stringify(res).length < 11_000);
    } finally {
      await registry.close();
    }
  });

  Deno.test(`progress reports reach the host in order, tagged with their call (${isolation})`, async () => {
    const { ws } = await tempLayout();
    const { registry } = await fixtureRegistry([MISBEHAVING], { isolation }, ws);
    try {
      const seen: Record<string, string[]> = { a: [], b: [] };
      const call = (tag: "a" | "b") =>
        registry.call("Progress", { tag }, {
          onReport: (kind, message, opts) => seen[tag].push(`${kind}:${message}:${opts?.progress}`),
        });
      const [a, b] = await Promise.all([call("a"), call("b")]);
      assert.equal(a.tag, "a");
      assert.equal(b.tag, "b");
      for (const tag of ["a", "b"]) {
        assert.deepEqual(seen[tag], [1, 2, 3, 4, 5].map((i) => `progress:${tag} ${i}:${i}`));
      }
    } finally {
      await registry.close();
    }
  });

  Deno.test(`a call past its timeout fails promptly and the sandbox keeps serving (${isolation})`, async () => {
    const { ws } = await tempLayout();
    const { registry } = await fixtureRegistry([MISBEHAVING], { isolation }, ws);
    try {
      const res = await registry.call("Sleep", { ms: 30_000 }, { timeoutMs: 200 });
      assert.equal(res.success, false);
      assert.equal(res.error, 'Cannot run tool "Sleep": timed out after 200 ms');
      assert.deepEqual(await registry.call("Echo", { value: 3 }), { success: true, value: 3 });
    } finally {
      await registry.close();
    }
  });
}

function _cpuTicks(pid: number): number | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

Deno.test("a busy-looping tool times out and its CPU is reclaimed (process)", async () => {
  const { ws } = await tempLayout();
  const { registry } = await fixtureRegistry([MISBEHAVING], { isolation: "process" }, ws);
  try {
    const sb = await registry.sandboxFor("Spin");
    const res = registry.call("Spin", {}, { timeoutMs: 500 });
    await new Promise((r) => setTimeout(r, 200));
    const pid = sb.pid!;
    assert.ok(pid > 0, "a sandbox process is running");
    const before = _cpuTicks(pid);
    assert.ok(before !== undefined);
    const result = await res;
    assert.equal(result.error, 'Cannot run tool "Spin": timed out after 500 ms');
    // The sandbox stops answering pings, so it is killed: its CPU time stops growing.
    let gone = false;
    for (let i = 0; i < 50 && !gone; i++) {
      await new Promise((r) => setTimeout(r, 100));
      gone = _cpuTicks(pid) === undefined;
    }
    assert.ok(gone, "the busy sandbox process was killed");
    assert.deepEqual(await registry.call("Echo", { value: 4 }), { success: true, value: 4 });
    assert.equal(sb.starts, 2, "the next call got a fresh sandbox");
  } finally {
    await registry.close();
  }
});

Deno.test("a worker that stops answering is replaced on the next call (worker)", async () => {
  const { ws } = await tempLayout();
  const { registry } = await fixtureRegistry([MISBEHAVING], { isolation: "worker" }, ws);
  try {
    const sb = await registry.sandboxFor("SpinFor");
    // Busy for 4 s: well past the call's timeout and the 1 s ping grace (also
    // on a loaded machine), so the worker is recycled; the loop ends by
    // itself, so no thread is left burning.
    const res = await registry.call("SpinFor", { ms: 4000 }, { timeoutMs: 300 });
    assert.equal(res.error, 'Cannot run tool "SpinFor": timed out after 300 ms');
    for (let i = 0; i < 40 && sb.running; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(sb.running, false, "the unresponsive worker was recycled");
    assert.deepEqual(await registry.call("Echo", { value: 6 }), { success: true, value: 6 });
    assert.equal(sb.starts, 2, "the next call got a fresh worker");
  } finally {
    await registry.close();
  }
});

Deno.test("a memory bomb is contained in process mode and the host keeps answering", async () => {
  const { ws } = await tempLayout();
  const { registry } = await fixtureRegistry([MISBEHAVING], {
    isolation: "process",
    memory_mb: 64,
    timeout_ms: 30_000,
  }, ws);
  try {
    const [bomb, echo] = await Promise.all([
      registry.call("Hog", {}),
      (async () => {
        await new Promise((r) => setTimeout(r, 50));
        return { success: true, host: "alive" };
      })(),
    ]);
    assert.equal(bomb.success, false);
    assert.match(String(bomb.error), /ran out of memory \(limit 64 MB\)/);
    assert.equal(echo.host, "alive");
    assert.deepEqual(await registry.call("Echo", { value: 5 }), { success: true, value: 5 });
  } finally {
    await registry.close();
  }
});

Deno.test("1000 concurrent calls across worker and process sandboxes all return to their callers", async () => {
  const { ws } = await tempLayout();
  const a = await fixtureRegistry([MISBEHAVING], { isolation: "worker" }, ws);
  const b = await fixtureRegistry([MISBEHAVING], { isolation: "process" }, ws);
  try {
    const calls = Array.from({ length: 1000 }, (_, i) => {
      const reg = i % 2 ? a.registry : b.registry;
      return reg.call("Echo", { value: { i, who: `caller-${i}` }, delay_ms: i % 7 });
    });
    const results = await Promise.all(calls);
    results.forEach((r, i) =>
      assert.deepEqual(r, { success: true, value: { i, who: `caller-${i}` } })
    );
  } finally {
    await a.registry.close();
    await b.registry.close();
  }
});
