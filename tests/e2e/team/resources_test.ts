// Hosted servers' resources, resource templates and prompts over --http (they answered
// "Method not found" there while stdio served them), filtered per identity as tools are:
// alice may reach the "docs" server only, bob everything but "docs". Two real servers
// (tests/fixtures/hosted/resource_server.ts) in corral's namespace, the real HTTP server.
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/client";
import { parseConfig } from "../../../core/config/corral_config.ts";
import { addToken } from "../../../core/identity/token_store.ts";
import { httpIdentityFromConfig } from "../../../core/mcp/http_identity.ts";
import { serveHttp } from "../../../core/mcp/serve_http.ts";
import { connectWithToken, fixtureServer, HOSTED_FIXTURES } from "../../../testing/mod.ts";
import { approve, hostedLayout, hostedRegistry } from "../../_hosted_helpers.ts";

const FIXTURE = join(HOSTED_FIXTURES, "resource_server.ts");
const server = (name: string) => ({
  command: fixtureServer(FIXTURE, { args: [name] }),
});
const SERVERS = { docs: server("docs"), secret: server("secret") };
const GRANTS = { docs: { read: ["."] }, secret: { read: ["."] } };

Deno.test("resources, templates and prompts of hosted servers over --http, only those of the servers each identity may reach", async () => {
  await using l = await hostedLayout();
  const first = await hostedRegistry(l, SERVERS, GRANTS);
  for (const s of Object.keys(SERVERS)) await approve(first.registry, s);
  await first.registry.close();
  const { registry } = await hostedRegistry(l, SERVERS, GRANTS);
  const config = parseConfig(
    JSON.stringify({
      identities: {
        alice: { workspace: l.ws, shared_workspace: true, toolsets: { allow: ["docs"] } },
        bob: { workspace: l.ws, shared_workspace: true, toolsets: { deny: ["docs"] } },
      },
      auth: { tokens_file: "tokens.json" },
    }),
    join(l.base, "corral.json"),
  );
  const tokens = {
    alice: await addToken("alice", join(l.base, "tokens.json")),
    bob: await addToken("bob", join(l.base, "tokens.json")),
  };
  const team = await httpIdentityFromConfig(config, {
    defaultToken: "d".repeat(64),
    serverWorkspace: l.ws,
  });
  const http = await serveHttp(registry, { port: 0, token: "d".repeat(64), team });
  const clients: Client[] = [];
  try {
    const alice = await connectWithToken(http.url, tokens.alice, "alice");
    const bob = await connectWithToken(http.url, tokens.bob, "bob");
    clients.push(alice, bob);
    // Alice: docs only.
    const ar = (await alice.listResources()).resources;
    assert.deepEqual(ar.map((r) => r.uri), ["memo://docs/readme"]);
    assert.equal(ar[0]._meta?.["corral/server"], "docs");
    const at = (await alice.listResourceTemplates()).resourceTemplates;
    assert.deepEqual(at.map((t) => t.uriTemplate), ["memo://docs/{id}"]);
    const read = await alice.readResource({ uri: "memo://docs/readme" });
    assert.equal((read.contents[0] as { text: string }).text, "the docs readme");
    const ap = (await alice.listPrompts()).prompts;
    assert.deepEqual(ap.map((p) => p.name), ["greet"], "no collision for her: no prefix");
    const got = await alice.getPrompt({ name: "greet" });
    assert.match(JSON.stringify(got.messages), /hello from docs/);
    // Bob: secret only, and its prompt is his "greet".
    const br = (await bob.listResources()).resources;
    assert.deepEqual(br.map((r) => r.uri), ["memo://secret/readme"]);
    // Another server's resource is not hers, even by its exact URI (listed by bob just now):
    // to her it does not exist (the spec's resource not found, -32602 with the URI; the v2
    // client's ProtocolError carries the code apart from its message).
    await assert.rejects(alice.readResource({ uri: "memo://secret/readme" }), {
      code: -32602,
      message: /^Resource not found: memo:\/\/secret\/readme/,
    });
    assert.match(JSON.stringify((await bob.getPrompt({ name: "greet" })).messages), /secret/);
    await assert.rejects(bob.readResource({ uri: "memo://docs/readme" }), /Resource not found/);
    // The reads are audited under each identity.
    const events = (await Deno.readTextFile(l.audit)).split("\n").filter(Boolean)
      .map((x) => JSON.parse(x)).filter((r) => r.kind === "server" && r.event === "resource");
    assert.ok(events.some((e) => e.identity === "alice" && e.server === "docs"));
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    await http.close();
    await registry.close();
  }
});
