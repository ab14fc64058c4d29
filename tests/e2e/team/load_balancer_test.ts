// Past one machine: three stateless replicas behind a real load balancer
// (HAProxy, from Debian's packages; .ci/run installs it). One replica is
// killed mid-run: every call is answered (a result or a clear error), none
// hangs, and later calls go to the living replicas.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";
import { freePort } from "../../../testing/mod.ts";

function _haproxy(): string {
  for (const p of ["/usr/sbin/haproxy", "/usr/bin/haproxy", "/usr/local/sbin/haproxy"]) {
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch { /* next */ }
  }
  throw new Error("load_balancer_test: haproxy is not installed (apt-get install haproxy)");
}

Deno.test("three stateless replicas behind HAProxy: one killed mid-run, every call answered, none hung", async () => {
  const haproxy = _haproxy();
  await using ws = await tempWorkspace();
  const audits = [0, 1, 2].map((i) => join(ws.cache, `audit-${i}.jsonl`));
  await using r0 = await startHttpCorral([
    "--http",
    "127.0.0.1:0",
    "--stateless",
    "--audit",
    audits[0],
  ], ws);
  await using r1 = await startHttpCorral([
    "--http",
    "127.0.0.1:0",
    "--stateless",
    "--audit",
    audits[1],
  ], ws);
  await using r2 = await startHttpCorral([
    "--http",
    "127.0.0.1:0",
    "--stateless",
    "--audit",
    audits[2],
  ], ws);
  const replicas = [r0, r1, r2];
  const port = freePort();
  const cfg = join(ws.cache, "haproxy.cfg");
  await Deno.writeTextFile(
    cfg,
    [
      "global",
      "  maxconn 256",
      "defaults",
      "  mode http",
      "  timeout connect 1s",
      "  timeout client 30s",
      "  timeout server 30s",
      "  retries 3",
      "  option redispatch",
      "frontend mcp",
      `  bind 127.0.0.1:${port}`,
      "  default_backend corral",
      "backend corral",
      "  balance roundrobin",
      "  retry-on conn-failure empty-response response-timeout",
      ...replicas.map((r, i) =>
        `  server c${i} 127.0.0.1:${new URL(r.url).port} check inter 200ms fall 1 rise 2`
      ),
      "",
    ].join("\n"),
  );
  const lb = new Deno.Command(haproxy, {
    args: ["-f", cfg, "-db"],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    for (let i = 0; i < 50; i++) {
      try {
        const c = await fetch(url, { method: "OPTIONS" });
        await c.body?.cancel();
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const outcomes: Array<{ ok: boolean; error?: string; at: number }> = [];
    let killedAt = Infinity;
    let stop = false;
    const worker = async () => {
      while (!stop) {
        const at = Date.now();
        const signal = AbortSignal.timeout(20_000);
        try {
          const client = new Client({ name: "lb", version: "1" });
          await client.connect(new StreamableHTTPClientTransport(url), { signal });
          const res = await client.callTool(
            { name: "WordCount", arguments: { filepath: "notes.txt" } },
            undefined,
            { signal },
          );
          await client.close();
          outcomes.push({
            ok: res.isError !== true,
            error: res.isError ? JSON.stringify(res) : undefined,
            at,
          });
        } catch (err) {
          if (signal.aborted) throw new Error(`a call hung for 20 s: ${err}`);
          outcomes.push({ ok: false, error: String(err), at });
        }
      }
    };
    const run = Promise.all([worker(), worker(), worker(), worker()]);
    let failed: unknown;
    run.catch((err) => failed = err);
    // Waits on the calls, bounded: a hung call fails the test, never the suite's clock.
    const until = async (done: () => boolean, what: string) => {
      const deadline = Date.now() + 120_000;
      while (!done() && failed === undefined) {
        assert.ok(Date.now() < deadline, `${what}: only ${outcomes.length} calls answered`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      // Kill one replica while calls are flowing...
      await until(() => outcomes.length >= 12, "before the kill");
      killedAt = Date.now();
      await r1.kill();
      // ...and go on until enough calls began well after it.
      await until(
        () =>
          Date.now() > killedAt + 3000 &&
          outcomes.filter((o) => o.at > killedAt + 500).length >= 10,
        "after the kill",
      );
    } finally {
      stop = true;
    }
    await run; // every call was answered: none threw "hung"
    assert.ok(outcomes.length >= 30, `calls answered: ${outcomes.length}`);
    for (const o of outcomes.filter((o) => !o.ok)) {
      assert.match(String(o.error), /\S/, "a failure says what failed");
    }
    const before = outcomes.filter((o) => o.at < killedAt);
    const after = outcomes.filter((o) => o.at > killedAt + 500);
    assert.ok(before.every((o) => o.ok), JSON.stringify(before.filter((o) => !o.ok)));
    assert.ok(after.length >= 10, `calls after the kill: ${after.length}`);
    assert.ok(after.every((o) => o.ok), JSON.stringify(after.filter((o) => !o.ok)));
    // The later calls were served by the living replicas only.
    const served = await Promise.all(audits.map(async (a) => {
      try {
        return (await Deno.readTextFile(a)).trim().split("\n").filter(Boolean)
          .map((l) => JSON.parse(l))
          .filter((r) => r.tool === "WordCount" && Date.parse(r.time) > killedAt + 500).length;
      } catch {
        return 0;
      }
    }));
    assert.equal(served[1], 0, "the killed replica served nothing later");
    assert.ok(served[0] > 0 && served[2] > 0, `later calls per replica: ${served}`);
  } finally {
    lb.kill("SIGTERM");
    await lb.status;
  }
});
