// JWKS rotation: a JWKS file is read again when it changes (a bad one
// refuses every JWT until fixed); a JWKS URL is fetched again for a key id
// it does not know, at most once per cooldown however many such tokens come.
import assert from "node:assert/strict";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { Authenticator } from "./authenticator.ts";
import { JwksUnavailableError, JwtVerifier } from "./jwt_verifier.ts";

const BASE = { audience: ["corral"], issuer: "https://idp.example", claim: "sub" };

async function _key(kid: string) {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: "ES256" };
  const claims: JWTPayload = {
    sub: `user-${kid}`,
    aud: "corral",
    iss: "https://idp.example",
    exp: Math.floor(Date.now() / 1000) + 300,
  };
  const token = await new SignJWT(claims).setProtectedHeader({ alg: "ES256", kid })
    .sign(privateKey);
  return { jwk, token };
}

/** Replace the file the way an operator's tool would: a new file renamed over it. */
async function _replace(file: string, text: string, mode = 0o644): Promise<void> {
  await Deno.writeTextFile(`${file}.tmp`, text, { mode });
  await Deno.chmod(`${file}.tmp`, mode);
  await Deno.rename(`${file}.tmp`, file);
}

Deno.test("JWKS file: a rotated key is seen without a restart; a file gone bad refuses every JWT (500) until fixed", async () => {
  const [k1, k2] = [await _key("k1"), await _key("k2")];
  const dir = await Deno.makeTempDir({ prefix: "corral_jwks_rotate_" });
  const file = `${dir}/jwks.json`;
  await _replace(file, JSON.stringify({ keys: [k1.jwk] }));
  const verifier = await JwtVerifier.create({ ...BASE, file, clockSkewSeconds: 5 });
  const auth = new Authenticator({ jwt: verifier });
  assert.equal(await verifier.verify(k1.token), "user-k1");
  await assert.rejects(verifier.verify(k2.token), /no key of the JWKS matches it/);
  // Rotation by rename (new inode): k2 in, k1 out.
  await _replace(file, JSON.stringify({ keys: [k2.jwk] }));
  assert.equal(await verifier.verify(k2.token), "user-k2");
  await assert.rejects(verifier.verify(k1.token), /no key of the JWKS matches it/);
  // Rewritten in place (same inode, new size): both.
  await Deno.writeTextFile(file, JSON.stringify({ keys: [k1.jwk, k2.jwk] }));
  assert.equal(await verifier.verify(k1.token), "user-k1");
  assert.equal(await verifier.verify(k2.token), "user-k2");
  // Gone bad: fail closed, the old keys are not used, the reason names the file.
  const bad: Array<[string, number, RegExp]> = [
    ["{ not json", 0o644, /JWKS file .*jwks\.json/],
    [JSON.stringify({ keys: [] }), 0o644, /holds no "keys"/],
    [JSON.stringify({ keys: [{ ...k1.jwk, d: "private" }] }), 0o644, /private or symmetric/],
    [
      JSON.stringify({ keys: [k1.jwk, k2.jwk] }),
      0o666,
      /may be written by others \(mode 666\): run chmod go-w/,
    ],
  ];
  for (const [text, mode, why] of bad) {
    await _replace(file, text, mode);
    for (const t of [k1.token, k2.token]) {
      await assert.rejects(verifier.verify(t), (e) => e instanceof JwksUnavailableError);
      await assert.rejects(verifier.verify(t), why);
      const r = await auth.authenticate(`Bearer ${t}`);
      assert.ok(!r.ok && r.status === 500 && why.test(r.detail ?? ""), JSON.stringify(r));
    }
  }
  await Deno.remove(file);
  await assert.rejects(verifier.verify(k2.token), /Cannot read the JWKS file/);
  await _replace(file, JSON.stringify({ keys: [k2.jwk] }));
  assert.equal(await verifier.verify(k2.token), "user-k2");
  await assert.rejects(verifier.verify(k1.token), /no key of the JWKS matches it/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("JWKS URL: an unknown key id refetches the set, at most once per cooldown whatever the burst", async () => {
  const [r1, r2] = [await _key("r1"), await _key("r2")];
  const keys = [r1.jwk];
  let fetched = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    fetched++;
    return Response.json({ keys });
  });
  try {
    const url = `http://127.0.0.1:${server.addr.port}/jwks.json`;
    const verifier = await JwtVerifier.create({ ...BASE, url, clockSkewSeconds: 5 });
    assert.equal(await verifier.verify(r1.token), "user-r1");
    assert.equal(fetched, 1);
    // A flood of tokens with key ids the IdP never published (each could trigger a fetch).
    const forged = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => (await _key(`forged-${i}`)).token),
    );
    await Promise.all(forged.map((t) => assert.rejects(verifier.verify(t), /no key/)));
    for (const t of forged) await assert.rejects(verifier.verify(t), /no key/);
    assert.equal(fetched, 1, "within the 30 s cooldown no refetch, however many unknown key ids");

    // With a short cooldown: the IdP rotates, a token with the new kid refetches and passes.
    const quick = await JwtVerifier.create({ ...BASE, url, clockSkewSeconds: 5 }, {
      urlCooldownMs: 200,
    });
    assert.equal(await quick.verify(r1.token), "user-r1");
    const before = fetched;
    keys.push(r2.jwk);
    await new Promise((r) => setTimeout(r, 300));
    await Promise.all(Array.from({ length: 20 }, async () => {
      assert.equal(await quick.verify(r2.token), "user-r2");
    }));
    assert.equal(fetched, before + 1, "one refetch for the new key id, shared by the burst");
  } finally {
    await server.shutdown();
  }
});
