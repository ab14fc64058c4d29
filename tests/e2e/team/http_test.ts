/**
 * A team server through the real HTTP server (serveHttp with a real
 * registry and sandboxes): static tokens and JWTs resolve to identities,
 * each identity lists and calls only its tools, a revoked token and bad
 * JWTs are refused with WWW-Authenticate, the protected-resource metadata
 * is served, a session cannot be taken over by another identity, calls per
 * minute answer 429 with Retry-After, and /metrics needs its own token.
 */
import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { parseConfig } from "../../../core/config/corral_config.ts";
import { parsePolicy } from "../../../core/config/policy.ts";
import { addToken, revokeToken } from "../../../core/identity/token_store.ts";
import { httpIdentityFromConfig, teamPolicy } from "../../../core/mcp/http_identity.ts";
import { serveHttp } from "../../../core/mcp/serve_http.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { FIXTURES, INIT_REQUEST as INIT } from "../../../testing/mod.ts";

const DEFAULT_TOKEN = "d".repeat(64);
const METRICS_TOKEN = "m".repeat(40);

function fixtureRegistry(workspace: string): Promise<Registry> {
  const policy = parsePolicy("{}", "test-permissions.json", workspace);
  return Registry.create({
    workspace,
    policy,
    noBuiltins: true,
    cacheDir: null,
    sources: [{
      id: "fixture",
      kind: "builtin",
      modules: [`${FIXTURES}progress_tools.ts`],
      policy: policy.toolset("fixture"),
    }],
  });
}

async function setup() {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_team_http_" }));
  const registry = await fixtureRegistry(dir);
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const other = await generateKeyPair("ES256", { extractable: true });
  await Deno.writeTextFile(
    `${dir}/jwks.json`,
    JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" }] }),
  );
  const config = parseConfig(
    JSON.stringify({
      identities: {
        alice: { tools: { allow: ["Steps"] }, limits: { per_minute: 3 } },
        bob: { tools: { deny: ["Steps"] } },
        carol: {},
        erin: { limits: { concurrent: 1 } },
      },
      auth: {
        tokens_file: "tokens.json",
        workspaces_dir: "people",
        jwks: { file: "jwks.json", audience: "corral", issuer: "https://idp.example" },
      },
    }),
    `${dir}/corral.json`,
  );
  const tokensFile = `${dir}/tokens.json`;
  const tokens = {
    alice: await addToken("alice", tokensFile),
    bob: await addToken("bob", tokensFile),
    mallory: await addToken("mallory", tokensFile),
    erin: await addToken("erin", tokensFile),
  };
  // Each identity's workspace has a registry (and so sandboxes) of its own.
  const policy = teamPolicy(config, dir);
  const registries = new Map<string, Registry>();
  for (const ws of policy.workspaces()) {
    await Deno.mkdir(ws, { recursive: true });
    registries.set(ws, await fixtureRegistry(ws));
  }
  const identity = await httpIdentityFromConfig(config, {
    defaultToken: DEFAULT_TOKEN,
    serverWorkspace: dir,
    policy,
    registries,
    metricsToken: METRICS_TOKEN,
  });
  const server = await serveHttp(registry, { port: 0, token: DEFAULT_TOKEN, team: identity });
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub: "carol", aud: "corral", iss: "https://idp.example", exp: now + 300 };
  const jwt = (c: JWTPayload = claims, key = privateKey) =>
    new SignJWT(c).setProtectedHeader({ alg: "ES256", kid: "k1" }).sign(key);
  return {
    dir,
    server,
    tokens,
    tokensFile,
    jwt,
    claims,
    now,
    otherKey: other.privateKey,
    async [Symbol.asyncDispose]() {
      await server.close();
      await registry.close();
      for (const r of registries.values()) await r.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

async function connect(url: string, token: string): Promise<Client & { sessionId?: string }> {
  const client = new Client({ name: "team-test", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return Object.assign(client, { sessionId: transport.sessionId });
}

function post(url: string, token: string | undefined, body: unknown, session?: string) {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(session ? { "mcp-session-id": session } : {}),
    },
    body: JSON.stringify(body),
  });
}

Deno.test("identities: each lists and calls only its own tools; unknown identities get 403", async () => {
  await using t = await setup();
  const alice = await connect(t.server.url, t.tokens.alice);
  const bob = await connect(t.server.url, t.tokens.bob);
  const carol = await connect(t.server.url, await t.jwt());
  const names = async (c: Client) => (await c.listTools()).tools.map((x) => x.name).sort();
  assert.deepEqual(await names(alice), ["Steps"]);
  assert.deepEqual(await names(bob), ["Guarded", "Sleep"]);
  assert.deepEqual(await names(carol), ["Guarded", "Sleep", "Steps"]);
  const ok = await alice.callTool({ name: "Steps", arguments: { steps: 1 } });
  assert.equal(ok.isError, false);
  // A tool it may not use is an unknown tool, and "did you mean" names only its own.
  await assert.rejects(
    alice.callTool({ name: "Sleep", arguments: { ms: 1 } }),
    /Unknown tool "Sleep"/,
  );
  await assert.rejects(
    bob.callTool({ name: "Steps", arguments: { steps: 1 } }),
    (err: Error) =>
      /Unknown tool "Steps"/.test(err.message) && !/did you mean: Steps/.test(err.message),
  );
  // A token whose identity has no entry in "identities".
  const mallory = await post(t.server.url, t.tokens.mallory, INIT);
  assert.equal(mallory.status, 403);
  assert.match((await mallory.json()).error.message, /"mallory" has no entry/);
  await Promise.all([alice.close(), bob.close(), carol.close()]);
});

Deno.test("a session belongs to its identity: another identity's token cannot use it", async () => {
  await using t = await setup();
  const alice = await connect(t.server.url, t.tokens.alice);
  assert.ok(alice.sessionId);
  const list = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };
  for (const token of [t.tokens.bob, await t.jwt(), DEFAULT_TOKEN]) {
    const r = await post(t.server.url, token, list, alice.sessionId);
    assert.equal(r.status, 404, "another identity does not find the session");
    await r.body?.cancel();
  }
  const own = await post(t.server.url, t.tokens.alice, list, alice.sessionId);
  assert.equal(own.status, 200);
  assert.match(await own.text(), /"Steps"/);
  await alice.close();
});

Deno.test("a revoked token is refused at its next request, in a session too", async () => {
  await using t = await setup();
  const alice = await connect(t.server.url, t.tokens.alice);
  assert.equal((await alice.listTools()).tools.length, 1);
  assert.equal(await revokeToken("alice", t.tokensFile), true);
  const again = await post(t.server.url, t.tokens.alice, INIT);
  assert.equal(again.status, 401);
  assert.match(again.headers.get("www-authenticate") ?? "", /error="invalid_token"/);
  await again.body?.cancel();
  await assert.rejects(alice.listTools(), /401|Unauthorized/);
  // Others are untouched.
  const bob = await connect(t.server.url, t.tokens.bob);
  assert.equal((await bob.listTools()).tools.length, 2);
  await bob.close();
  await alice.close().catch(() => {});
});

Deno.test("JWTs: bad signature, wrong audience, expired: 401 with invalid_token; the metadata says where to authenticate", async () => {
  await using t = await setup();
  const bad: Array<[string, string, RegExp]> = [
    ["bad signature", await t.jwt(t.claims, t.otherKey), /signature/],
    ["wrong audience", await t.jwt({ ...t.claims, aud: "another-server" }), /aud/],
    ["expired", await t.jwt({ ...t.claims, exp: t.now - 3600 }), /expired/],
  ];
  for (const [what, token, reason] of bad) {
    const r = await post(t.server.url, token, INIT);
    assert.equal(r.status, 401, what);
    const header = r.headers.get("www-authenticate") ?? "";
    assert.match(header, /^Bearer realm="corral", resource_metadata="[^"]+"/, what);
    assert.match(header, /error="invalid_token"/, what);
    assert.match(await r.text(), reason, what);
  }
  const none = await post(t.server.url, undefined, INIT);
  assert.equal(none.status, 401);
  const header = none.headers.get("www-authenticate")!;
  assert.doesNotMatch(header, /error=/, "no token sent: no error code (RFC 6750)");
  await none.body?.cancel();
  const metaUrl = /resource_metadata="([^"]+)"/.exec(header)![1];
  assert.equal(new URL(metaUrl).pathname, "/.well-known/oauth-protected-resource/mcp");
  const meta = await (await fetch(metaUrl)).json();
  assert.equal(meta.resource, t.server.url);
  assert.deepEqual(meta.bearer_methods_supported, ["header"]);
});

Deno.test("calls per minute per identity: beyond the limit 429 with Retry-After; others go on", async () => {
  await using t = await setup();
  const alice = await connect(t.server.url, t.tokens.alice);
  const call = (id: number) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "Steps", arguments: { steps: 1 } },
  });
  for (let i = 0; i < 3; i++) {
    const r = await post(t.server.url, t.tokens.alice, call(10 + i), alice.sessionId);
    assert.equal(r.status, 200, `call ${i + 1} of 3`);
    await r.text();
  }
  const refused = await post(t.server.url, t.tokens.alice, call(20), alice.sessionId);
  assert.equal(refused.status, 429);
  const retry = Number(refused.headers.get("retry-after"));
  assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
  assert.match(await refused.text(), /3 calls per minute/);
  // Listing is not a call; another identity is not limited by alice's bucket.
  assert.equal((await alice.listTools()).tools.length, 1);
  const bob = await connect(t.server.url, t.tokens.bob);
  for (let i = 0; i < 5; i++) {
    assert.equal((await bob.callTool({ name: "Sleep", arguments: { ms: 1 } })).isError, false);
  }
  await Promise.all([alice.close(), bob.close()]);
});

Deno.test("/metrics needs its own token and counts calls by identity and outcome", async () => {
  await using t = await setup();
  const bob = await connect(t.server.url, t.tokens.bob);
  await bob.callTool({ name: "Sleep", arguments: { ms: 1 } });
  const metrics = t.server.url.replace(/\/mcp$/, "/metrics");
  for (const token of [undefined, DEFAULT_TOKEN, t.tokens.bob]) {
    const r = await fetch(metrics, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    assert.equal(r.status, 401, "the MCP tokens do not open /metrics");
    await r.body?.cancel();
  }
  const r = await fetch(metrics, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  assert.equal(r.status, 200);
  assert.match(
    await r.text(),
    /corral_calls_total\{tool="Sleep",toolset="fixture",identity="bob",outcome="success"\} [1-9]/,
  );
  await bob.close();
});

Deno.test("calls at once per identity: beyond limits.concurrent (no queue) the request waits a moment, then 429; the slot frees", async () => {
  await using t = await setup();
  const erin = await connect(t.server.url, t.tokens.erin);
  const long = erin.callTool({ name: "Sleep", arguments: { ms: 2500 } });
  await new Promise((r) => setTimeout(r, 300));
  const started = performance.now();
  await assert.rejects(
    erin.callTool({ name: "Sleep", arguments: { ms: 1 } }),
    /Too many requests: .*erin.* already has 1 calls running/,
  );
  assert.ok(performance.now() - started >= 900, "it waited for room before the refusal");
  // Another identity is not held back by erin's limit.
  const bob = await connect(t.server.url, t.tokens.bob);
  assert.equal((await bob.callTool({ name: "Sleep", arguments: { ms: 1 } })).isError, false);
  assert.equal((await long).isError, false);
  assert.equal((await erin.callTool({ name: "Sleep", arguments: { ms: 1 } })).isError, false);
  await Promise.all([erin.close(), bob.close()]);
});
