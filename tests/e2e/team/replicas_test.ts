// Identities beyond one machine: three stateless replicas behind HAProxy
// (round robin) share identities and tokens by sharing corral's config
// directory. Each identity sees its own tools whichever replica answers,
// and a token revoked once is refused by every replica at its next request.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { addToken, revokeToken } from "../../../core/identity/token_store.ts";
import { firstFile, freePort, INIT_BODY } from "../../../testing/mod.ts";
import { startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";

const HAPROXY = firstFile(["/usr/sbin/haproxy", "/usr/bin/haproxy"]);

async function toolsOf(url: URL, token: string): Promise<string[]> {
  const client = new Client({ name: "replicas", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  const names = (await client.listTools()).tools.map((t) => t.name).sort();
  await client.close();
  return names;
}

Deno.test("three stateless replicas behind HAProxy share identities and tokens; a revoked token is refused by all", async () => {
  assert.ok(HAPROXY, "haproxy is not installed (.ci/run installs it)");
  await using ws = await tempWorkspace();
  // Every replica reads the same config directory (childEnv: <cache>/config).
  const configDir = join(ws.cache, "config");
  await Deno.mkdir(configDir, { recursive: true });
  await Deno.writeTextFile(
    join(configDir, "corral.json"),
    JSON.stringify({
      identities: {
        alice: { workspace: ws.dir, shared_workspace: true, tools: { allow: ["ReadFile"] } },
        bob: { workspace: ws.dir, shared_workspace: true, tools: { allow: ["WordCount"] } },
      },
    }),
  );
  const tokensFile = join(configDir, "tokens.json");
  const alice = await addToken("alice", tokensFile);
  const bob = await addToken("bob", tokensFile);
  const args = ["--http", "127.0.0.1:0", "--stateless", "--keep-token"];
  await using r0 = await startHttpCorral(args, ws);
  await using r1 = await startHttpCorral(args, ws);
  await using r2 = await startHttpCorral(args, ws);
  const port = freePort();
  const cfg = join(ws.cache, "haproxy.cfg");
  await Deno.writeTextFile(
    cfg,
    [
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
      ...[r0, r1, r2].map((r, i) => `  server c${i} 127.0.0.1:${new URL(r.url).port}`),
      "",
    ].join("\n"),
  );
  const lb = new Deno.Command(HAPROXY, { args: ["-f", cfg, "-db"], stdout: "null", stderr: "null" })
    .spawn();
  try {
    const url = new URL(`http://127.0.0.1:${port}/mcp`);
    for (let i = 0; i < 50; i++) {
      try {
        await (await fetch(url, { method: "OPTIONS" })).body?.cancel();
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    // Each listing is two requests (initialize, tools/list): over six, every replica answers.
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(await toolsOf(url, alice), ["ReadFile"]);
      assert.deepEqual(await toolsOf(url, bob), ["WordCount"]);
    }
    assert.equal(await revokeToken("alice", tokensFile), true);
    const init = INIT_BODY;
    for (let i = 0; i < 6; i++) {
      const r = await fetch(url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${alice}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: init,
      });
      assert.equal(r.status, 401, `request ${i + 1} after the revocation`);
      assert.match(r.headers.get("www-authenticate") ?? "", /invalid_token/);
      await r.body?.cancel();
    }
    assert.deepEqual(await toolsOf(url, bob), ["WordCount"]);
  } finally {
    lb.kill("SIGTERM");
    await lb.status;
  }
});
