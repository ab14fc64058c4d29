// The operator is a role, not a name: no token name or JWT claim value
// turns into it unless the operator lists that name; and the files that
// decide identity (tokens, JWKS, the server's own token) are refused when
// another user owns them or others may write them. These tests chown files
// to another user (uid 65534), so they need root (as .ci/run has).
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { parseConfig } from "../../../core/config/corral_config.ts";
import { OPERATOR_IDENTITY, resolveTeamConfig } from "../../../core/config/team_config.ts";
import { serverToken } from "../../../core/mcp/server_token.ts";
import { ConfigError } from "../../../core/tool/errors.ts";
import { Authenticator } from "../../../core/identity/authenticator.ts";
import { IdentityPolicy, IdentityRefusedError } from "../../../core/identity/identity_policy.ts";
import { JwtVerifier } from "../../../core/identity/jwt_verifier.ts";
import { addToken, readTokens, TokenStore } from "../../../core/identity/token_store.ts";

const OTHER_UID = 65534; // nobody

function _mustBeRoot(): void {
  assert.equal(Deno.uid(), 0, "these tests chown files to another user: run them as root");
}

async function _jwks() {
  const dir = await Deno.makeTempDir({ prefix: "corral_operator_" });
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" };
  const file = `${dir}/jwks.json`;
  await Deno.writeTextFile(file, JSON.stringify({ keys: [jwk] }));
  const settings = {
    file,
    audience: ["corral"],
    issuer: "https://idp.example",
    claim: "sub",
    clockSkewSeconds: 30,
  };
  const now = Math.floor(Date.now() / 1000);
  const sign = (sub: string, extra: JWTPayload = {}) =>
    new SignJWT({ sub, aud: "corral", iss: "https://idp.example", exp: now + 300, ...extra })
      .setProtectedHeader({ alg: "ES256", kid: "k1" }).sign(privateKey);
  return { dir, file, settings, sign };
}

Deno.test('a JWT claiming "default" is an ordinary identity, never the operator; reserved names are refused', async () => {
  const { dir, settings, sign } = await _jwks();
  const auth = new Authenticator({
    defaultToken: "d".repeat(64),
    jwt: await JwtVerifier.create(settings),
  });
  const claimed = await auth.authenticate(`Bearer ${await sign("default")}`);
  assert.ok(claimed.ok && claimed.identity === "default", JSON.stringify(claimed));
  assert.notEqual(claimed.identity, OPERATOR_IDENTITY);
  // The operator's own name cannot be claimed: it is not an identity name at all.
  for (const sub of [OPERATOR_IDENTITY, "local"]) {
    const r = await auth.authenticate(`Bearer ${await sign(sub)}`);
    assert.ok(!r.ok && r.status === 401, `${sub}: ${JSON.stringify(r)}`);
  }
  // With identities configured, "default" without an entry is refused like any stranger, and
  // with an entry it works in its own folder, not in the server's workspace.
  const team = resolveTeamConfig(
    { alice: {} },
    { workspaces_dir: "people" },
    dir,
    `${dir}/corral.json`,
  );
  const policy = new IdentityPolicy(team.identities, {
    serverWorkspace: `${dir}/ws`,
    workspacesDir: team.auth.workspacesDir,
  });
  assert.throws(() => policy.resolve("default"), IdentityRefusedError);
  assert.equal(policy.resolve(OPERATOR_IDENTITY).workspace, `${dir}/ws`);
  const withDefault = new IdentityPolicy(
    resolveTeamConfig({ default: {} }, { workspaces_dir: "people" }, dir, `${dir}/c.json`)
      .identities,
    { serverWorkspace: `${dir}/ws`, workspacesDir: `${dir}/people` },
  );
  assert.equal(withDefault.resolve("default").workspace, `${dir}/people/default`);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a name is the operator only when auth.operator_identities lists it", async () => {
  const { dir, settings, sign } = await _jwks();
  const tokens = `${dir}/tokens.json`;
  const ops = await addToken("ops", tokens);
  const team = resolveTeamConfig(
    {},
    { operator_identities: ["root-admin", "ops"] },
    dir,
    `${dir}/corral.json`,
  );
  assert.deepEqual(team.auth.operatorIdentities, ["root-admin", "ops"]);
  const auth = new Authenticator({
    defaultToken: "d".repeat(64),
    tokens: new TokenStore(tokens),
    jwt: await JwtVerifier.create(settings),
    operatorIdentities: team.auth.operatorIdentities,
  });
  const listed = await auth.authenticate(`Bearer ${await sign("root-admin")}`);
  assert.ok(listed.ok && listed.identity === OPERATOR_IDENTITY);
  const token = await auth.authenticate(`Bearer ${ops}`);
  assert.ok(token.ok && token.identity === OPERATOR_IDENTITY);
  const other = await auth.authenticate(`Bearer ${await sign("root-admin2")}`);
  assert.ok(other.ok && other.identity === "root-admin2");
  // The list holds identity names: "@operator" or a reserved name cannot be listed.
  for (const name of ["local", OPERATOR_IDENTITY]) {
    assert.throws(
      () => parseConfig(JSON.stringify({ auth: { operator_identities: [name] } }), "c.json"),
      /auth\.operator_identities/,
    );
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a JWKS file owned by another user is refused: at start, and when it changes hands while serving", async () => {
  _mustBeRoot();
  const { dir, file, settings, sign } = await _jwks();
  await Deno.chown(file, OTHER_UID, OTHER_UID);
  await assert.rejects(
    JwtVerifier.create(settings),
    (e) => e instanceof ConfigError && /belongs to uid 65534/.test(e.message),
  );
  // Ours again: it works; then handed to another user while the server runs: every JWT 500.
  await Deno.chown(file, 0, 0);
  const auth = new Authenticator({
    defaultToken: "d".repeat(64),
    jwt: await JwtVerifier.create(settings),
  });
  const token = await sign("alice");
  assert.ok((await auth.authenticate(`Bearer ${token}`)).ok);
  await Deno.chown(file, OTHER_UID, OTHER_UID);
  const r = await auth.authenticate(`Bearer ${token}`);
  assert.ok(!r.ok && r.status === 500, JSON.stringify(r));
  assert.match(r.detail ?? "", /JWKS file .* belongs to uid 65534.*chown 0/);
  assert.ok(!r.message.includes(file), "the client is not told the file's path");
  // Owned by us but writable by others: refused too.
  await Deno.chown(file, 0, 0);
  await Deno.chmod(file, 0o646);
  const w = await auth.authenticate(`Bearer ${token}`);
  assert.ok(!w.ok && w.status === 500 && /chmod go-w/.test(w.detail ?? ""));
  await Deno.chmod(file, 0o644);
  assert.ok((await auth.authenticate(`Bearer ${token}`)).ok, "fixed: accepted again");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a tokens file or the server's own token owned by another user is not trusted", async () => {
  _mustBeRoot();
  const dir = await Deno.makeTempDir({ prefix: "corral_operator_tokens_" });
  const file = `${dir}/tokens.json`;
  const alice = await addToken("alice", file);
  await Deno.chown(file, OTHER_UID, OTHER_UID);
  await assert.rejects(readTokens(file), /belongs to uid 65534/);
  const r = await new Authenticator({ tokens: new TokenStore(file) }).authenticate(
    `Bearer ${alice}`,
  );
  assert.ok(!r.ok && r.status === 500, "fail closed");
  // mcp-token planted by another user (mode 0600, their token): replaced, never used.
  const planted = "a".repeat(64);
  await Deno.writeTextFile(`${dir}/mcp-token`, planted + "\n", { mode: 0o600 });
  await Deno.chown(`${dir}/mcp-token`, OTHER_UID, OTHER_UID);
  const made = await serverToken(dir);
  assert.ok(made.created && made.token !== planted);
  assert.equal((await Deno.stat(made.file)).uid, 0);
  await Deno.remove(dir, { recursive: true });
});
