// Unit tests of core/identity/: static tokens (hashes, 0600, revocation seen
// by a running store), JWTs (signature, aud, iss, exp, nbf, algorithms),
// the authenticator's order, per-identity policy and limits.
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { resolveTeamConfig } from "../config/team_config.ts";
import { ConfigError } from "../tool/errors.ts";
import { Authenticator } from "./authenticator.ts";
import { IdentityPolicy, IdentityRefusedError } from "./identity_policy.ts";
import { JwtVerifier } from "./jwt_verifier.ts";
import { ConcurrencyLimiter } from "./_concurrency_limiter.ts";
import { RateLimiter } from "./_rate_limiter.ts";
import { addToken, readTokens, revokeToken, TokenStore } from "./token_store.ts";
import { metadataUrl } from "./protected_resource.ts";

async function tempFile(): Promise<string> {
  return `${await Deno.makeTempDir({ prefix: "corral_identity_" })}/cfg/tokens.json`;
}

Deno.test("tokens: stored as hashes, 0600; revoking is seen by a running store at its next use", async () => {
  const file = await tempFile();
  const alice = await addToken("alice", file);
  const bob = await addToken("bob", file);
  const text = await Deno.readTextFile(file);
  assert.ok(!text.includes(alice) && !text.includes(bob), "the file holds no token");
  assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
  const store = new TokenStore(file);
  assert.equal(await store.identityOf(alice), "alice");
  assert.equal(await store.identityOf(bob), "bob");
  assert.equal(await store.identityOf(alice.slice(0, -1) + "x"), null);
  assert.equal(await store.identityOf(""), null);
  assert.equal(await revokeToken("alice", file), true);
  assert.equal(await revokeToken("alice", file), false);
  assert.equal(await store.identityOf(alice), null, "a revoked token is refused at once");
  assert.equal(await store.identityOf(bob), "bob");
  assert.deepEqual((await readTokens(file)).map((e) => e.name), ["bob"]);
  await assert.rejects(addToken("bob", file), /has one already/);
  await assert.rejects(addToken("local", file), /reserved/);
  await assert.rejects(addToken("@operator", file), /a name starts with/);
  await assert.rejects(addToken("../x", file), /a name starts with/);
});

Deno.test("tokens: a file others may read is refused, and the store fails closed", async () => {
  const file = await tempFile();
  const token = await addToken("alice", file);
  await Deno.chmod(file, 0o644);
  await assert.rejects(
    readTokens(file),
    (e) => e instanceof ConfigError && /chmod 600/.test(e.message),
  );
  const auth = new Authenticator({ tokens: new TokenStore(file) });
  const r = await auth.authenticate(`Bearer ${token}`);
  assert.ok(!r.ok && r.status === 500 && /chmod 600/.test(r.detail ?? ""));
  assert.ok(!r.ok && !r.message.includes(file), "the client is not told the file's path");
  await Deno.writeTextFile(file, '{"tokens": [{"name": "x", "sha256": "nope"}]}', { mode: 0o600 });
  await Deno.chmod(file, 0o600);
  await assert.rejects(readTokens(file), /tokens\[0\] needs a name and a sha256/);
});

async function jwtSetup(extra: Record<string, unknown> = {}) {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const other = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256", use: "sig" };
  const dir = await Deno.makeTempDir({ prefix: "corral_jwks_" });
  await Deno.writeTextFile(`${dir}/jwks.json`, JSON.stringify({ keys: [jwk] }));
  const settings = {
    file: `${dir}/jwks.json`,
    audience: ["corral"],
    issuer: "https://idp.example",
    claim: "sub",
    clockSkewSeconds: 30,
    ...extra,
  };
  const verifier = await JwtVerifier.create(settings);
  const sign = (claims: JWTPayload, key = privateKey, kid = "k1") =>
    new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid }).sign(key);
  const now = Math.floor(Date.now() / 1000);
  const good = { sub: "alice", aud: "corral", iss: "https://idp.example", exp: now + 300 };
  return { verifier, sign, good, now, other, dir, privateKey };
}

Deno.test("JWT: a valid token names its sub; bad signature, audience, issuer, expiry and nbf are refused", async () => {
  const { verifier, sign, good, now, other } = await jwtSetup();
  assert.equal(await verifier.verify(await sign(good)), "alice");
  // Within the clock skew: still accepted.
  assert.equal(await verifier.verify(await sign({ ...good, exp: now - 10 })), "alice");
  const refused: Array<[string, Promise<string>, RegExp]> = [
    ["bad signature", sign(good, other.privateKey), /signature does not match/],
    ["wrong audience", sign({ ...good, aud: "someone-else" }), /"aud"/],
    ["wrong issuer", sign({ ...good, iss: "https://evil.example" }), /"iss"/],
    ["expired", sign({ ...good, exp: now - 120 }), /expired/],
    ["not yet valid", sign({ ...good, nbf: now + 600 }), /"nbf"/],
    ["no exp", sign({ sub: "alice", aud: "corral", iss: "https://idp.example" }), /"exp"/],
    ["unknown key id", sign(good, other.privateKey, "k2"), /no key of the JWKS/],
    ["bad identity claim", sign({ ...good, sub: "a b\n" }), /not an identity name/],
  ];
  for (const [what, token, reason] of refused) {
    await assert.rejects(verifier.verify(await token), reason, what);
  }
  // A tampered payload with the original signature.
  const [h, , s] = (await sign(good)).split(".");
  const forged = btoa(JSON.stringify({ ...good, sub: "root" })).replace(/=+$/, "")
    .replace(/\+/g, "-").replace(/\//g, "_");
  await assert.rejects(verifier.verify(`${h}.${forged}.${s}`), /signature does not match/);
  // alg "none": never accepted.
  const none = `${btoa('{"alg":"none"}').replace(/=+$/, "")}.${forged}.`;
  await assert.rejects(verifier.verify(none + "x"), /invalid JWT/);
});

Deno.test("JWT: HS256 signed with the public key (algorithm confusion) is refused; the claim is configurable", async () => {
  const { sign, good, dir, privateKey } = await jwtSetup();
  const jwks = JSON.parse(await Deno.readTextFile(`${dir}/jwks.json`));
  const hmacKey = new TextEncoder().encode(JSON.stringify(jwks.keys[0]));
  const confused = await new SignJWT(good).setProtectedHeader({ alg: "HS256", kid: "k1" })
    .sign(hmacKey);
  const verifier = await JwtVerifier.create({
    file: `${dir}/jwks.json`,
    audience: ["corral"],
    issuer: "https://idp.example",
    claim: "email",
    clockSkewSeconds: 0,
  });
  await assert.rejects(verifier.verify(confused), /algorithm is not allowed/);
  assert.equal(
    await verifier.verify(await sign({ ...good, email: "bob@example.com" })),
    "bob@example.com",
  );
  await assert.rejects(verifier.verify(await sign(good)), /"email" claim/);
  void privateKey;
  // A JWKS with a private key in it is a config error, and a missing file too.
  const priv = await generateKeyPair("ES256", { extractable: true });
  await Deno.writeTextFile(
    `${dir}/bad.json`,
    JSON.stringify({ keys: [await exportJWK(priv.privateKey)] }),
  );
  const base = { audience: ["a"], issuer: "i", claim: "sub", clockSkewSeconds: 0 };
  await assert.rejects(
    JwtVerifier.create({ ...base, file: `${dir}/bad.json` }),
    /private or symmetric/,
  );
  await assert.rejects(JwtVerifier.create({ ...base, file: `${dir}/none.json` }), ConfigError);
  await assert.rejects(JwtVerifier.create({ ...base, url: "http://idp.example/jwks" }), /https/);
});

Deno.test("authenticator: default token, static token, JWT; anything else is 401", async () => {
  const file = await tempFile();
  const alice = await addToken("alice", file);
  const { verifier, sign, good } = await jwtSetup();
  const auth = new Authenticator({
    defaultToken: "d".repeat(64),
    tokens: new TokenStore(file),
    jwt: verifier,
  });
  assert.deepEqual(await auth.authenticate(`Bearer ${"d".repeat(64)}`), {
    ok: true,
    identity: "@operator",
    method: "default",
  });
  assert.deepEqual(await auth.authenticate(`Bearer ${alice}`), {
    ok: true,
    identity: "alice",
    method: "token",
  });
  assert.deepEqual(await auth.authenticate(`Bearer ${await sign({ ...good, sub: "carol" })}`), {
    ok: true,
    identity: "carol",
    method: "jwt",
  });
  for (
    const h of [
      null,
      "",
      "Basic abc",
      `Bearer ${"d".repeat(63)}`,
      `Bearer ${alice}x`,
      "Bearer a.b.c",
    ]
  ) {
    const r = await auth.authenticate(h);
    assert.ok(!r.ok && r.status === 401, `refused: ${h}`);
  }
  const open = new Authenticator({});
  assert.deepEqual(await open.authenticate(null), {
    ok: true,
    identity: "@operator",
    method: "none",
  });
});

Deno.test("identity policy: tool lists, own workspaces, refusal of unlisted identities", () => {
  const team = resolveTeamConfig(
    {
      alice: {
        toolsets: { allow: ["files"] },
        tools: { deny: ["WriteFile"] },
        limits: { per_minute: 2 },
      },
      bob: { workspace: "/srv/shared", shared_workspace: true },
      carol: { workspace: "/srv/shared", shared_workspace: true },
    },
    { workspaces_dir: "/srv/people" },
    "/etc/corral",
    "/etc/corral/corral.json",
  );
  const p = new IdentityPolicy(team.identities, {
    serverWorkspace: "/srv/ws",
    workspacesDir: team.auth.workspacesDir,
  });
  const a = p.resolve("alice");
  assert.equal(a.workspace, "/srv/people/alice");
  assert.equal(a.limits.perMinute, 2);
  assert.ok(a.access.allows({ name: "ReadFile", toolset: "files" }));
  assert.ok(!a.access.allows({ name: "WriteFile", toolset: "files" }));
  assert.ok(!a.access.allows({ name: "RunBashCode", toolset: "shell" }));
  assert.equal(p.resolve("bob").workspace, "/srv/shared");
  assert.ok(p.resolve("bob").access.allows({ name: "RunBashCode", toolset: "shell" }));
  assert.equal(p.resolve("@operator").workspace, "/srv/ws");
  // "default" is an ordinary name: without an entry it is refused like any other.
  assert.throws(() => p.resolve("default"), IdentityRefusedError);
  assert.deepEqual(p.workspaces(), ["/srv/people/alice", "/srv/shared"]);
  assert.throws(() => p.resolve("mallory"), IdentityRefusedError);
  // Two identities naming one workspace without agreeing to share it: refused.
  assert.throws(
    () =>
      resolveTeamConfig(
        { bob: { workspace: "w" }, carol: { workspace: "w" } },
        {},
        "/x",
        "/x/corral.json",
      ),
    /identities\.bob\.workspace: "\/x\/w" is also the workspace of "carol"/,
  );
  // An identity with no workspace and no workspaces_dir would share the server's: refused.
  assert.throws(
    () =>
      new IdentityPolicy(resolveTeamConfig({ dave: {} }, {}, "/x", "/x/c.json").identities, {
        serverWorkspace: "/ws",
        workspacesDir: null,
      }),
    /"dave" name no workspace/,
  );
});

Deno.test("limits: token bucket refills over the minute; concurrency counts per identity", () => {
  const r = new RateLimiter(3);
  for (let i = 0; i < 60; i++) assert.deepEqual(r.take("a", 60, 0), { ok: true });
  assert.deepEqual(r.take("a", 60, 0), { ok: false, retryAfterSeconds: 1 });
  assert.deepEqual(r.take("b", 60, 0), { ok: true }, "another identity has its own bucket");
  assert.deepEqual(r.take("a", 60, 1000), { ok: true });
  assert.deepEqual(r.take("slow", 1, 0), { ok: true });
  assert.deepEqual(r.take("slow", 1, 1000), { ok: false, retryAfterSeconds: 59 });
  // The map stays bounded.
  for (let i = 0; i < 50; i++) r.take(`k${i}`, 10, 2000);
  assert.ok(r.size <= 3);
  const c = new ConcurrencyLimiter();
  const rel = [c.tryAcquire("a", 2), c.tryAcquire("a", 2)];
  assert.equal(c.tryAcquire("a", 2), null);
  assert.ok(c.tryAcquire("b", 2));
  rel[0]!();
  assert.ok(c.tryAcquire("a", 2));
});

Deno.test("protected-resource metadata URL puts the path after the well-known part", () => {
  assert.equal(
    metadataUrl("https://h.example/mcp"),
    "https://h.example/.well-known/oauth-protected-resource/mcp",
  );
  assert.equal(
    metadataUrl("https://h.example/"),
    "https://h.example/.well-known/oauth-protected-resource",
  );
});

Deno.test("JWT: a JWKS URL (loopback here; https elsewhere) is fetched, and a bad token from it is refused", async () => {
  const { publicKey, privateKey } = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "r1", alg: "RS256" };
  let fetched = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    fetched++;
    return Response.json({ keys: [jwk] });
  });
  try {
    const verifier = await JwtVerifier.create({
      url: `http://127.0.0.1:${server.addr.port}/jwks.json`,
      audience: ["corral"],
      issuer: "https://idp.example",
      claim: "sub",
      clockSkewSeconds: 5,
    });
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: "dave", aud: "corral", iss: "https://idp.example", exp: now + 60 };
    const token = await new SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: "r1" })
      .sign(privateKey);
    assert.equal(await verifier.verify(token), "dave");
    assert.equal(await verifier.verify(token), "dave");
    assert.equal(fetched, 1, "the key set is cached");
    const expired = await new SignJWT({ ...claims, exp: now - 60 })
      .setProtectedHeader({ alg: "RS256", kid: "r1" }).sign(privateKey);
    await assert.rejects(verifier.verify(expired), /expired/);
  } finally {
    await server.shutdown();
  }
});
