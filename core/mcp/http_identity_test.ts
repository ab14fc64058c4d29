// Unit tests of core/mcp/http_identity.ts on real Requests: the metadata
// and /metrics routes, 401/403 answers, calls per minute counted only for
// tools/call on the endpoint, and a body over the limit never read whole.
import assert from "node:assert/strict";
import { resolveTeamConfig } from "../config/team_config.ts";
import { addToken } from "../identity/token_store.ts";
import { CorralMetrics } from "../telemetry/metrics.ts";
import { httpIdentityFromConfig } from "./http_identity.ts";

const DEFAULT = "d".repeat(64);

async function setup() {
  const dir = await Deno.makeTempDir({ prefix: "corral_http_identity_" });
  const team = resolveTeamConfig(
    { alice: { limits: { per_minute: 2 } }, "@operator": {} },
    { tokens_file: "tokens.json" },
    dir,
    `${dir}/corral.json`,
  );
  // Everyone in the server's workspace here: no registries needed.
  team.identities.alice.workspace = dir;
  const alice = await addToken("alice", `${dir}/tokens.json`);
  const stranger = await addToken("stranger", `${dir}/tokens.json`);
  const metrics = new CorralMetrics();
  const id = await httpIdentityFromConfig(team, {
    defaultToken: DEFAULT,
    serverWorkspace: dir,
    metricsToken: "m".repeat(32),
  });
  return { id, alice, stranger, metrics };
}

const call = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "X" } });
const req = (token: string | null, body?: BodyInit, path = "/mcp") =>
  new Request(`http://127.0.0.1:9/${path.slice(1)}`, {
    method: body === undefined ? "GET" : "POST",
    headers: token ? { authorization: `Bearer ${token}` } : {},
    body,
  });

Deno.test("routes: the protected-resource metadata without a token; /metrics only with its own", async () => {
  const { id } = await setup();
  const meta = await id.route(
    req(null, undefined, "/.well-known/oauth-protected-resource/mcp"),
    "/mcp",
  );
  assert.equal(meta?.status, 200);
  assert.equal((await meta!.json()).resource, "http://127.0.0.1:9/mcp");
  assert.equal((await id.route(req(DEFAULT, undefined, "/metrics"), "/mcp"))?.status, 401);
  assert.equal((await id.route(req("m".repeat(32), undefined, "/metrics"), "/mcp"))?.status, 200);
  assert.equal(await id.route(req(DEFAULT, undefined, "/mcp"), "/mcp"), null);
});

Deno.test("admit: 401 with WWW-Authenticate, 403 for an identity without an entry, 429 beyond per_minute", async () => {
  const { id, alice, stranger } = await setup();
  const none = await id.admit(req(null, call), "/mcp", 1 << 20);
  assert.ok(none instanceof Response && none.status === 401);
  assert.match(
    none.headers.get("www-authenticate")!,
    /resource_metadata="http:\/\/127\.0\.0\.1:9\/\.well-known\/oauth-protected-resource\/mcp"/,
  );
  const bad = await id.admit(req("corral_nope", call), "/mcp", 1 << 20);
  assert.ok(bad instanceof Response && bad.status === 401);
  assert.match(bad.headers.get("www-authenticate")!, /error="invalid_token"/);
  const s = await id.admit(req(stranger, call), "/mcp", 1 << 20);
  assert.ok(s instanceof Response && s.status === 403);
  const d = await id.admit(req(DEFAULT, call), "/mcp", 1 << 20);
  assert.ok(!(d instanceof Response) && d.identity.name === "@operator");
  // Listing is not a call; two calls pass, the third is refused with Retry-After.
  const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
  for (let i = 0; i < 5; i++) {
    assert.ok(!((await id.admit(req(alice, list), "/mcp", 1 << 20)) instanceof Response));
  }
  for (let i = 0; i < 2; i++) {
    assert.ok(!((await id.admit(req(alice, call), "/mcp", 1 << 20)) instanceof Response));
  }
  const r = await id.admit(req(alice, call), "/mcp", 1 << 20);
  assert.ok(r instanceof Response && r.status === 429);
  assert.ok(Number(r.headers.get("retry-after")) >= 1);
  // The request's body is still there for the transport.
  const kept = req(DEFAULT, call);
  await id.admit(kept, "/mcp", 1 << 20);
  assert.equal(await kept.text(), call);
});

Deno.test("admit: a body over the limit is not read whole (a stream that never ends is not waited for)", async () => {
  const { id, alice } = await setup();
  let pulled = 0;
  const endless = new ReadableStream<Uint8Array>({
    pull(c) {
      pulled++;
      c.enqueue(new Uint8Array(64 * 1024));
    },
  });
  const r = await id.admit(req(alice, endless), "/mcp", 256 * 1024);
  assert.ok(!(r instanceof Response), "left to the transport's own limit");
  assert.ok(pulled < 16, `read ${pulled} chunks`);
});

Deno.test("identities without the server's own token are a config error (no one would be checked)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "corral_http_identity_" });
  const team = resolveTeamConfig({ alice: { workspace: "." } }, {}, dir, `${dir}/corral.json`);
  await assert.rejects(
    httpIdentityFromConfig(team, { serverWorkspace: dir }),
    (err: Error) => err.name === "ConfigError" && /need the server's own token/.test(err.message),
  );
  // Without identities, --no-token keeps serving everyone as "default".
  const open = await httpIdentityFromConfig(
    resolveTeamConfig(undefined, undefined, dir, `${dir}/corral.json`),
    { serverWorkspace: dir },
  );
  const r = await open.admit(req(null, "{}"), "/mcp", 1024);
  assert.ok(!(r instanceof Response) && r.identity.name === "@operator");
});
