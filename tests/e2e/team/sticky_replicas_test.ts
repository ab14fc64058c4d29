// Beyond one machine with sessions: three session-keeping replicas behind
// HAProxy, which keeps each session on its replica by its Mcp-Session-Id
// (a stick table filled from the response header). Identities and tokens are
// shared through one config directory. One replica is killed: its sessions
// get a clean error (HTTP 404 "Session not found" from the replica HAProxy
// falls over to), start again on another replica and go on; every session on
// the other replicas goes on with no error, on the same replica as before.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { addToken } from "../../../core/identity/token_store.ts";
import { startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";
import { firstFile, freePort } from "../../../testing/mod.ts";

const HAPROXY = firstFile(["/usr/sbin/haproxy", "/usr/bin/haproxy"]);

/** The README's HAProxy configuration, with these replicas' ports and shorter timeouts. */
function _haproxyConfig(port: number, replicaPorts: number[]): string {
  return [
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
    "  stick-table type string len 64 size 10k expire 30m",
    "  stick match req.hdr(mcp-session-id)",
    "  stick store-response res.hdr(mcp-session-id)",
    // Only for the test: which replica answered.
    "  http-response set-header x-served-by %s",
    ...replicaPorts.map((p, i) => `  server c${i} 127.0.0.1:${p} check inter 200ms fall 1 rise 2`),
    "",
  ].join("\n");
}

interface _Session {
  who: "alice" | "bob";
  client: Client;
  /** The replica (c0..c2) that answered each request of this session. */
  servedBy: string[];
}

async function _open(url: URL, who: "alice" | "bob", token: string): Promise<_Session> {
  const servedBy: string[] = [];
  const client = new Client({ name: `sticky-${who}`, version: "1" });
  client.onerror = () => {}; // The standalone GET stream of a killed replica ends: expected.
  await client.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: async (input, init) => {
        const r = await fetch(input, init);
        const by = r.headers.get("x-served-by");
        // The standalone GET stream is not counted: it may be refused (405) or long-lived.
        if (by && (init?.method ?? "GET") === "POST") servedBy.push(by);
        return r;
      },
    }),
  );
  return { who, client, servedBy };
}

async function _call(s: _Session): Promise<void> {
  const r = s.who === "alice"
    ? await s.client.callTool({ name: "ReadFile", arguments: { filepath: "notes.txt" } })
    : await s.client.callTool({ name: "WordCount", arguments: { filepath: "notes.txt" } });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  const tools = (await s.client.listTools()).tools.map((t) => t.name);
  assert.deepEqual(tools, [s.who === "alice" ? "ReadFile" : "WordCount"]);
}

function _replicaOf(s: _Session): string {
  const set = new Set(s.servedBy);
  assert.equal(set.size, 1, `one session, one replica: ${s.servedBy.join(",")}`);
  return s.servedBy[0];
}

Deno.test("three replicas behind HAProxy keep sessions by Mcp-Session-Id; a killed replica's sessions get a clean 404 and start again elsewhere, the others go on", async () => {
  assert.ok(HAPROXY, "haproxy is not installed (.ci/run installs it)");
  await using ws = await tempWorkspace();
  await Deno.writeTextFile(join(ws.dir, "notes.txt"), "one two three\n");
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
  const tokens = {
    alice: await addToken("alice", tokensFile),
    bob: await addToken("bob", tokensFile),
  };
  const args = ["--http", "127.0.0.1:0", "--keep-token"];
  await using r0 = await startHttpCorral(args, ws);
  await using r1 = await startHttpCorral(args, ws);
  await using r2 = await startHttpCorral(args, ws);
  const replicas = [r0, r1, r2];
  const port = freePort();
  const cfg = join(ws.cache, "haproxy.cfg");
  await Deno.writeTextFile(cfg, _haproxyConfig(port, replicas.map((r) => +new URL(r.url).port)));
  const lb = new Deno.Command(HAPROXY, {
    args: ["-f", cfg, "-db"],
    stdout: "null",
    stderr: "piped",
  })
    .spawn();
  const sessions: _Session[] = [];
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
    for (let i = 0; i < 12; i++) {
      const who = i % 2 === 0 ? "alice" : "bob";
      sessions.push(await _open(url, who, tokens[who]));
    }
    for (let round = 0; round < 3; round++) for (const s of sessions) await _call(s);
    const placed = sessions.map(_replicaOf);
    // Round robin spreads new sessions over all three replicas.
    assert.deepEqual([...new Set(placed)].sort(), ["c0", "c1", "c2"]);
    const victim = placed[0];
    await replicas[+victim.slice(1)].kill();
    // Let HAProxy's health check mark it down (fall 1, inter 200ms).
    await new Promise((r) => setTimeout(r, 800));
    for (const [i, s] of sessions.entries()) {
      if (placed[i] !== victim) {
        await _call(s);
        assert.equal(_replicaOf(s), placed[i], "a session on a living replica stays there");
        continue;
      }
      // A clean error: the replica HAProxy falls over to does not know the session.
      const err = await _call(s).then(() => undefined, (e) => e);
      assert.ok(err instanceof StreamableHTTPError, `a clear transport error, got ${err}`);
      assert.equal(err.code, 404);
      assert.match(err.message, /Session not found/);
      await s.client.close();
      // The client starts again (MCP: on 404, initialize a new session) on another replica.
      const again = await _open(url, s.who, tokens[s.who]);
      await _call(again);
      await _call(again);
      assert.notEqual(_replicaOf(again), victim);
      sessions[i] = again;
    }
    assert.ok(placed.filter((p) => p === victim).length >= 1);
  } finally {
    for (const s of sessions) await s.client.close().catch(() => {});
    lb.kill("SIGTERM");
    await lb.status;
    await lb.stderr.cancel();
  }
});
