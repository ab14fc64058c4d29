// Static tokens with an expiry (`corral tokens add NAME --expires 30d`),
// through the real CLI and the real HTTP server: a token before its expiry
// is accepted, after it refused with 401 like a revoked one; a bad expiry is
// a usage error naming --expires.
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli } from "../../_helpers.ts";
import { INIT_BODY as INIT } from "../../../testing/mod.ts";
import { startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";

async function _initialize(url: string, token: string): Promise<Response> {
  const r = await fetch(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: INIT,
  });
  await r.body?.cancel();
  return r;
}

Deno.test("corral tokens add --expires: accepted before its expiry, refused with 401 after it", async () => {
  await using ws = await tempWorkspace();
  const configDir = join(ws.cache, "config");
  await Deno.mkdir(configDir, { recursive: true });
  await Deno.writeTextFile(
    join(configDir, "corral.json"),
    JSON.stringify({
      identities: {
        alice: { workspace: ws.dir, shared_workspace: true },
        bob: { workspace: ws.dir, shared_workspace: true },
      },
    }),
  );
  const env = { CORRAL_CONFIG_DIR: configDir };
  const a = await runCli(["tokens", "add", "alice", "--expires", "30d"], { env });
  assert.equal(a.code, 0, a.stderr);
  assert.match(a.stderr, /expires 20\d\d-/);
  const alice = a.stdout.trim();
  const b = await runCli(["tokens", "add", "bob", "--expires", "3s"], { env });
  assert.equal(b.code, 0, b.stderr);
  const bob = b.stdout.trim();
  for (const bad of ["soon", "0d", "2001-01-01T00:00:00Z", "5"]) {
    const r = await runCli(["tokens", "add", "carol", "--expires", bad], { env });
    assert.equal(r.code, 2, `--expires ${bad}`);
    assert.match(r.stderr, /--expires must be a duration like 12h or 30d/);
  }
  const misplaced = await runCli(["tokens", "revoke", "alice", "--expires", "1d"], { env });
  assert.equal(misplaced.code, 2);
  assert.match(misplaced.stderr, /--expires goes with tokens add/);
  const list = await runCli(["tokens", "list", "--json"], { env });
  const listed = JSON.parse(list.stdout).tokens as Array<{ name: string; expires?: string }>;
  assert.deepEqual(listed.map((t) => t.name), ["alice", "bob"]);
  const aliceUntil = Date.parse(listed[0].expires!);
  const bobUntil = Date.parse(listed[1].expires!);
  assert.ok(aliceUntil > Date.now() + 29 * 86400e3, listed[0].expires);

  await using server = await startHttpCorral(["--http", "127.0.0.1:0", "--keep-token"], ws);
  assert.equal((await _initialize(server.url, alice)).status, 200);
  // Past bob's expiry (the server reads the same clock): refused like a revoked token.
  await new Promise((r) => setTimeout(r, Math.max(0, bobUntil - Date.now()) + 100));
  for (let i = 0; i < 3; i++) {
    const r = await _initialize(server.url, bob);
    assert.equal(r.status, 401);
    assert.match(r.headers.get("www-authenticate") ?? "", /invalid_token/);
  }
  assert.equal((await _initialize(server.url, alice)).status, 200);
  const after = await runCli(["tokens", "list"], { env });
  assert.match(after.stdout, /bob {2}created \S+ {2}EXPIRED /);
});
