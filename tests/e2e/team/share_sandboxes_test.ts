/**
 * `identities.<name>.share_sandboxes` through a real `corral mcp --http`:
 * with it, two sessions of one identity run in the same sandbox (the same
 * process on the host, kept while one of them lives); without it (the default) each session gets its
 * own; and never does one identity's session reach another identity's sandbox.
 */
import assert from "node:assert/strict";
import type { Client } from "@modelcontextprotocol/client";
import { join } from "node:path";
import { addToken } from "../../../core/identity/token_store.ts";
import { connectWithToken } from "../../../testing/mod.ts";
import { startHttpCorral, tempWorkspace, textOf } from "../../_mcp_helpers.ts";

const connect = (url: string, token: string) => connectWithToken(url, token, "share-test");

/** The direct children of `pid` on the host (a sandbox is one of the server's). */
function children(pid: number): Set<number> {
  const out = new Set<number>();
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const st = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      if (Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]) === pid) out.add(Number(e.name));
    } catch { /* gone */ }
  }
  return out;
}

Deno.test("share_sandboxes: one identity's sessions share a sandbox; by default each has its own; never across identities", async () => {
  await using ws = await tempWorkspace();
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_team_share_" }));
  for (const who of ["alice", "bob"]) await Deno.mkdir(join(base, who));
  const configDir = join(ws.cache, "config");
  await Deno.mkdir(configDir, { recursive: true });
  await Deno.writeTextFile(
    join(configDir, "corral.json"),
    JSON.stringify({
      identities: {
        alice: { workspace: join(base, "alice"), share_sandboxes: true },
        bob: { workspace: join(base, "bob") },
      },
    }),
  );
  const alice = await addToken("alice", join(configDir, "tokens.json"));
  const bob = await addToken("bob", join(configDir, "tokens.json"));
  // Its own token stays (--keep-token): the identities' tokens are what is tested.
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0", "-x", "--keep-token"], ws);
  const url = corral.url;
  // The sandboxes a call started: new children of the server on the host.
  const bash = async (c: Client) => {
    const before = children(corral.pid);
    const r = await c.callTool({ name: "RunBashCode", arguments: { code: "echo hi" } });
    assert.match(textOf(r), /hi/);
    return [...children(corral.pid)].filter((p) => !before.has(p));
  };
  try {
    const [a1, a2, b1, b2] = await Promise.all([
      connect(url, alice),
      connect(url, alice),
      connect(url, bob),
      connect(url, bob),
    ]);
    const aliceStarted = await bash(a1);
    assert.equal(aliceStarted.length, 1, "alice's first call starts a sandbox");
    const aliceBox = aliceStarted[0];
    const bobStarted = [...await bash(b1), ...await bash(b2)];
    // Default: each of bob's sessions starts its own sandbox, and neither is alice's.
    assert.equal(bobStarted.length, 2, `bob's sessions each start one: ${bobStarted}`);
    assert.ok(!bobStarted.includes(aliceBox));
    for (let round = 0; round < 5; round++) {
      // Shared: alice's second session runs in the sandbox of her first (the same process).
      assert.deepEqual(await bash(a2), [], "alice's second session started no sandbox");
      assert.deepEqual(await bash(a1), []);
      // Bob's sessions keep theirs: nothing new, and alice's still runs.
      assert.deepEqual([...await bash(b1), ...await bash(b2)], []);
      for (const p of [aliceBox, ...bobStarted]) assert.ok(children(corral.pid).has(p));
    }
    // Alice's first session ends: her other one still holds the shared sandbox.
    await a1.close();
    assert.deepEqual(await bash(a2), []);
    assert.ok(children(corral.pid).has(aliceBox));
    await Promise.all([a2.close(), b1.close(), b2.close()]);
  } finally {
    await corral[Symbol.asyncDispose]();
    await Deno.remove(base, { recursive: true }).catch(() => {});
  }
});
