// `corral tokens add | list | revoke` end to end: the token is printed once,
// only its hash is stored (0600), a revoked token no longer resolves.
import assert from "node:assert/strict";
import { TokenStore } from "../../../core/identity/token_store.ts";
import { runCli } from "../../_helpers.ts";

Deno.test("corral tokens add prints a token once, list names it, revoke removes it", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_tokens_cli_" }));
  const env = { CORRAL_CONFIG_DIR: dir };
  const add = await runCli(["tokens", "add", "alice"], { env });
  assert.equal(add.code, 0, add.stderr);
  const token = add.stdout.trim();
  assert.match(token, /^corral_[A-Za-z0-9_-]{43}$/);
  const file = `${dir}/tokens.json`;
  assert.ok(!(await Deno.readTextFile(file)).includes(token), "only the hash is stored");
  assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
  const store = new TokenStore(file);
  assert.equal(await store.identityOf(token), "alice");

  const list = await runCli(["tokens", "list", "--json"], { env });
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual(JSON.parse(list.stdout).tokens.map((t: { name: string }) => t.name), ["alice"]);
  assert.ok(!list.stdout.includes(token));

  const again = await runCli(["tokens", "add", "alice"], { env });
  assert.equal(again.code, 2);
  assert.match(again.stderr, /has one already/);

  const revoke = await runCli(["tokens", "revoke", "alice"], { env });
  assert.equal(revoke.code, 0, revoke.stderr);
  assert.equal(await store.identityOf(token), null);
  const missing = await runCli(["tokens", "revoke", "alice"], { env });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /no token for "alice"/);
  const bad = await runCli(["tokens", "rotate", "x"], { env });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /unknown tokens command "rotate"/);
  const help = await runCli(["help", "tokens"], { env });
  assert.match(help.stdout, /corral tokens add NAME/);
});
