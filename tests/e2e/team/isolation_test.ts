/**
 * Two identities on one real `corral mcp --http` server, each with its own
 * grant and workspace: each sees and calls only its own tools, and alice,
 * who holds RunBashCode, cannot read bob's workspace by path, by a walk of
 * the file system, or through /proc while bob's sandbox is running; bob's
 * canary is untouched and the server still answers both.
 */
import assert from "node:assert/strict";
import type { Client } from "@modelcontextprotocol/client";
import { join } from "node:path";
import { addToken } from "../../../core/identity/token_store.ts";
import { connectWithToken } from "../../../testing/mod.ts";
import { startHttpCorral, tempWorkspace, textOf } from "../../_mcp_helpers.ts";

const connect = (url: string, token: string) => connectWithToken(url, token, "isolation-test");

Deno.test("two identities: own tools, own workspace; RunBashCode and /proc do not reach the other's", async () => {
  await using ws = await tempWorkspace();
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_team_iso_" }));
  const aliceWs = join(base, "alice");
  const bobWs = join(base, "bob");
  await Deno.mkdir(aliceWs);
  await Deno.mkdir(bobWs);
  const canary = `CANARY-${crypto.randomUUID()}`;
  await Deno.writeTextFile(join(bobWs, "secret.txt"), canary);
  await Deno.writeTextFile(join(aliceWs, "mine.txt"), "alice's own file");
  const configDir = join(ws.cache, "config");
  await Deno.mkdir(configDir, { recursive: true });
  await Deno.writeTextFile(
    join(configDir, "corral.json"),
    JSON.stringify({
      identities: {
        alice: { workspace: aliceWs, tools: { allow: ["ReadFile", "ListFiles", "RunBashCode"] } },
        bob: { workspace: bobWs, tools: { allow: ["ReadFile", "WordCount"] } },
      },
    }),
  );
  const alice = await addToken("alice", join(configDir, "tokens.json"));
  const bob = await addToken("bob", join(configDir, "tokens.json"));

  // Its own token stays (--keep-token): the identities' tokens are what is tested.
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0", "-x", "--keep-token"], ws);
  const url = corral.url;
  try {
    const a = await connect(url, alice);
    const b = await connect(url, bob);
    const names = async (c: Client) => (await c.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(await names(a), ["ListFiles", "ReadFile", "RunBashCode"]);
    assert.deepEqual(await names(b), ["ReadFile", "WordCount"]);
    await assert.rejects(
      b.callTool({ name: "RunBashCode", arguments: { code: "id" } }),
      /Unknown tool "RunBashCode"/,
    );
    // Bob's workspace is his: his sandbox reads his file (and stays running for the attack).
    const own = await b.callTool({ name: "ReadFile", arguments: { filepath: "secret.txt" } });
    assert.match(textOf(own), new RegExp(canary));
    // Alice's is hers.
    const mine = await a.callTool({ name: "ReadFile", arguments: { filepath: "mine.txt" } });
    assert.match(textOf(mine), /alice's own file/);

    const attacks = [
      `cat ${bobWs}/secret.txt`,
      `cat ../bob/secret.txt`,
      `ls -la ${base} ${bobWs}`,
      `grep -r CANARY / --include=secret.txt -s | head`,
      `for p in /proc/[0-9]*; do cat $p/root${bobWs}/secret.txt $p/cwd/secret.txt 2>/dev/null; done`,
      `ls /proc/*/cwd/ 2>&1 | head -50; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -i bob`,
    ];
    for (let round = 0; round < 3; round++) {
      for (const code of attacks) {
        const r = await a.callTool({ name: "RunBashCode", arguments: { code, timeout: 20 } });
        assert.doesNotMatch(textOf(r), new RegExp(canary), `alice read bob's canary with: ${code}`);
      }
      const byPath = await a.callTool({
        name: "ReadFile",
        arguments: { filepath: join(bobWs, "secret.txt") },
      });
      assert.doesNotMatch(textOf(byPath), new RegExp(canary));
      assert.equal(byPath.isError, true);
    }
    // The attack tool works (the test can fail): alice's bash sees her own file.
    const control = await a.callTool({ name: "RunBashCode", arguments: { code: "cat mine.txt" } });
    assert.match(textOf(control), /alice's own file/);
    assert.equal(await Deno.readTextFile(join(bobWs, "secret.txt")), canary);
    // The server still answers both.
    assert.deepEqual(await names(b), ["ReadFile", "WordCount"]);
    await Promise.all([a.close(), b.close()]);
  } finally {
    await corral[Symbol.asyncDispose]();
    await Deno.remove(base, { recursive: true }).catch(() => {});
  }
});
