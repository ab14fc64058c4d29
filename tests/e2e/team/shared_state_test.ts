// Limits that hold across replicas: two `corral mcp --http` replicas behind a real HAProxy
// (sessions kept on their replica by Mcp-Session-Id, new ones round robin) share a real Redis
// (--shared-state, tests/_redis.ts). Alice's calls per minute and sessions are limited
// together, whichever replica answers; a revocation made on one replica's config directory
// reaches the other through Redis, and ends bob's sessions on both. Without Redis reachable,
// a replica refuses to start, and a running one answers 503 until Redis is back.
import assert from "node:assert/strict";
import { join } from "node:path";
import { firstFile, freePort, startRedis } from "../../../testing/mod.ts";
import { runCli } from "../../_helpers.ts";
import { startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";
import {
  openSession,
  OPERATOR_TOKEN,
  postHeaders,
  rpcAnswers,
  toolCall,
} from "../../_team_helpers.ts";
import { addToken } from "../../../core/identity/token_store.ts";

const HAPROXY = firstFile(["/usr/sbin/haproxy", "/usr/bin/haproxy"]);

function _haproxyConfig(port: number, replicaPorts: number[]): string {
  return [
    "defaults",
    "  mode http",
    "  timeout connect 1s",
    "  timeout client 30s",
    "  timeout server 30s",
    "frontend mcp",
    `  bind 127.0.0.1:${port}`,
    "  default_backend corral",
    "backend corral",
    "  balance roundrobin",
    "  stick-table type string len 64 size 10k expire 30m",
    "  stick match req.hdr(mcp-session-id)",
    "  stick store-response res.hdr(mcp-session-id)",
    "  http-response set-header x-served-by %s",
    ...replicaPorts.map((p, i) => `  server c${i} 127.0.0.1:${p}`),
    "",
  ].join("\n");
}

Deno.test("two replicas behind HAProxy sharing Redis: calls per minute and sessions limited together; a revocation on one reaches both", async () => {
  assert.ok(HAPROXY, "haproxy is not installed (.ci/run installs it)");
  await using redis = await startRedis();
  await using ws = await tempWorkspace();
  // Each replica has its own config directory (copies): only Redis carries the revocation.
  const dirs = [join(ws.cache, "config"), join(ws.cache, "config-b")];
  for (const d of dirs) await Deno.mkdir(d, { recursive: true });
  const identities = {
    alice: { workspace: ws.dir, shared_workspace: true, limits: { per_minute: 6, sessions: 3 } },
    bob: { workspace: ws.dir, shared_workspace: true },
  };
  await Deno.writeTextFile(join(dirs[0], "corral.json"), JSON.stringify({ identities }));
  const alice = await addToken("alice", join(dirs[0], "tokens.json"));
  const bob = await addToken("bob", join(dirs[0], "tokens.json"));
  for (const f of ["corral.json", "tokens.json"]) {
    await Deno.copyFile(join(dirs[0], f), join(dirs[1], f));
  }
  await Deno.chmod(join(dirs[1], "tokens.json"), 0o600);
  const args = ["--http", "127.0.0.1:0", "--token", OPERATOR_TOKEN, "--shared-state", redis.url];
  await using r0 = await startHttpCorral(args, ws);
  await using r1 = await startHttpCorral(args, ws, { CORRAL_CONFIG_DIR: dirs[1] });
  assert.match(r0.stderr(), /limits and revocations shared through redis:\/\/127\.0\.0\.1/);
  const port = freePort();
  const cfg = join(ws.cache, "haproxy.cfg");
  await Deno.writeTextFile(
    cfg,
    _haproxyConfig(port, [r0, r1].map((r) => Number(new URL(r.url).port))),
  );
  const lb = new Deno.Command(HAPROXY!, {
    args: ["-f", cfg, "-db"],
    stdout: "null",
    stderr: "null",
  })
    .spawn();
  try {
    const url = `http://127.0.0.1:${port}/mcp`;
    for (let i = 0; i < 50; i++) {
      try {
        await (await fetch(url, { method: "OPTIONS" })).body?.cancel();
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    // Sessions: 3 for alice in all, spread over both replicas; the 4th and 5th are refused.
    const opened: Array<string | number> = [];
    for (let i = 0; i < 5; i++) opened.push(await openSession(url, alice));
    const sids = opened.filter((s): s is string => typeof s === "string");
    assert.equal(sids.length, 3, JSON.stringify(opened));
    assert.deepEqual(opened.slice(3), [429, 429]);
    // Calls per minute: 6 in all, whichever replica (her sessions live on both).
    const served = new Set<string>();
    let ran = 0, limited = 0;
    for (let i = 0; i < 12; i++) {
      const sid = sids[i % sids.length];
      const r = await fetch(url, {
        method: "POST",
        headers: postHeaders(alice, sid),
        body: JSON.stringify(toolCall(100 + i, "E2eSleep", { ms: 0 })),
      });
      served.add(r.headers.get("x-served-by") ?? "");
      if (r.status === 429) {
        limited++;
        await r.body?.cancel();
      } else {
        const [a] = await rpcAnswers(r);
        if (!(a.result as { isError?: boolean }).isError) ran++;
      }
    }
    assert.deepEqual([...served].sort(), ["c0", "c1"], "both replicas answered");
    assert.equal(ran, 6, "6 calls a minute across the replicas, not 6 each");
    assert.equal(limited, 6);
    // Bob's sessions on both replicas (round robin); his token is revoked on replica 0's config
    // directory only, with the shared state: both refuse it, and his sessions end on both.
    for (let i = 0; i < 2; i++) assert.equal(typeof await openSession(url, bob), "string");
    const revoke = await runCli(["tokens", "revoke", "bob", "--shared-state", redis.url], {
      env: { CORRAL_CONFIG_DIR: dirs[0] },
    });
    assert.equal(revoke.code, 0, revoke.stderr);
    assert.match(revoke.stderr, /revoked on every replica sharing redis:\/\/127\.0\.0\.1/);
    for (const replica of [r0, r1]) {
      const r = await fetch(replica.url, {
        method: "POST",
        headers: postHeaders(bob),
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }),
      });
      assert.equal(r.status, 401, `replica ${replica.url}`);
      await r.body?.cancel();
    }
    await new Promise((r) => setTimeout(r, 500));
    assert.match(r0.stderr() + r1.stderr(), /ended a session of "bob"/);
    assert.equal((r0.stderr() + r1.stderr()).match(/ended a session of "bob"/g)?.length, 2);
  } finally {
    lb.kill("SIGTERM");
    await lb.status;
  }
});

Deno.test("shared state out of reach: a replica refuses to start; a running one answers 503 until Redis is back", async () => {
  await using ws = await tempWorkspace();
  const dead = `redis://127.0.0.1:${freePort()}`;
  await assert.rejects(
    startHttpCorral(
      ["--http", "127.0.0.1:0", "--token", OPERATOR_TOKEN, "--shared-state", dead],
      ws,
    ),
    (err: Error) =>
      /ended before listening/.test(err.message) &&
      /cannot reach the shared state redis:\/\/127\.0\.0\.1:\d+ \(--shared-state\)/.test(
        err.message,
      ),
  );
  await using redis = await startRedis();
  await using corral = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--token", OPERATOR_TOKEN, "--shared-state", redis.url],
    ws,
  );
  const init = () =>
    fetch(corral.url, {
      method: "POST",
      headers: postHeaders(OPERATOR_TOKEN),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "t", version: "1" },
        },
      }),
    });
  const ok = await init();
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  await redis.kill();
  await new Promise((r) => setTimeout(r, 300));
  const down = await init();
  assert.equal(down.status, 503);
  assert.match((await down.json()).error.message, /shared state redis:\/\/127\.0\.0\.1:\d+/);
  await redis.start();
  let back = 0;
  for (let i = 0; i < 60 && back !== 200; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const r = await init();
    back = r.status;
    await r.body?.cancel();
  }
  assert.equal(back, 200, "served again once Redis is back");
});
