// Unit tests of core/mcp/http_identity.ts on real Requests: the metadata
// and /metrics routes, 401/403 answers counted and logged per address with
// no token material, calls per minute counted per call.
import assert from "node:assert/strict";
import { resolveTeamConfig } from "../config/team_config.ts";
import { addToken } from "../identity/token_store.ts";
import { CorralMetrics } from "../telemetry/metrics.ts";
import { AuthFailures } from "./auth_failures.ts";
import { httpIdentityFromConfig } from "./http_identity.ts";

const DEFAULT = "d".repeat(64);

async function setup(more: { failures?: AuthFailures } = {}) {
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
    ...more,
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

Deno.test("admit: 401 with WWW-Authenticate, 403 for an identity without an entry; failures counted and logged per address, no token in them", async () => {
  const lines: string[] = [];
  const metrics = new CorralMetrics();
  const { id, stranger } = await setup({
    failures: new AuthFailures({ metrics, log: (l) => lines.push(l) }),
  });
  const from = (token: string | null, address: string) => {
    const r = req(token, call);
    r.headers.set("corral-client-address", address);
    return r;
  };
  const none = await id.admit(from(null, "10.0.0.7"), "/mcp");
  assert.ok(none instanceof Response && none.status === 401);
  assert.match(
    none.headers.get("www-authenticate")!,
    /resource_metadata="http:\/\/127\.0\.0\.1:9\/\.well-known\/oauth-protected-resource\/mcp"/,
  );
  const guess = "corral_" + "g".repeat(43);
  for (let i = 0; i < 50; i++) {
    const bad = await id.admit(from(guess, "10.0.0.7"), "/mcp");
    assert.ok(bad instanceof Response && bad.status === 401);
    assert.match(bad.headers.get("www-authenticate")!, /error="invalid_token"/);
  }
  const s = await id.admit(from(stranger, "10.0.0.8"), "/mcp");
  assert.ok(s instanceof Response && s.status === 403);
  const d = await id.admit(req(DEFAULT, call), "/mcp");
  assert.ok(!(d instanceof Response) && d.identity.name === "@operator");
  // Counted in the metrics by status; one log line per address so far (the rest at the window's end).
  const text = await metrics.render();
  assert.match(text, /corral_auth_failures_total\{status="401"\} 51/);
  assert.match(text, /corral_auth_failures_total\{status="403"\} 1/);
  assert.equal(lines.length, 2, lines.join("\n"));
  assert.match(lines[0], /authentication failed from 10\.0\.0\.7: 401/);
  assert.match(lines[1], /from 10\.0\.0\.8: 403/);
  assert.ok(!lines.join("").includes(guess) && !lines.join("").includes(stranger));
});

Deno.test("calls per minute count calls: a 30-call batch under per_minute 2 gets a ticket for 2", async () => {
  const { id, alice } = await setup();
  const who = await id.admit(req(alice, call), "/mcp");
  assert.ok(!(who instanceof Response));
  assert.equal(await id.takeCalls(who, 0), undefined, "listing is not a call");
  const ticket = await id.takeCalls(who, 30);
  assert.ok(ticket && !(ticket instanceof Response));
  assert.equal(ticket.granted, 2);
  assert.ok(ticket.take() && ticket.take() && !ticket.take());
  assert.match(ticket.message, /"alice" may make 2 calls per minute .*counted in this replica/);
  const next = await id.takeCalls(who, 1);
  assert.ok(next && !(next instanceof Response) && next.granted === 0);
  assert.ok(next.retryAfterSeconds >= 1);
});

Deno.test("identities without the server's own token are a config error (no one would be checked)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "corral_http_identity_" });
  const team = resolveTeamConfig({ alice: { workspace: "." } }, {}, dir, `${dir}/corral.json`);
  await assert.rejects(
    httpIdentityFromConfig(team, { serverWorkspace: dir }),
    (err: Error) => err.name === "ConfigError" && /need the server's own token/.test(err.message),
  );
  // Without identities, --no-token keeps serving everyone as the operator.
  const open = await httpIdentityFromConfig(
    resolveTeamConfig(undefined, undefined, dir, `${dir}/corral.json`),
    { serverWorkspace: dir },
  );
  const r = await open.admit(req(null, "{}"), "/mcp");
  assert.ok(!(r instanceof Response) && r.identity.name === "@operator");
});
