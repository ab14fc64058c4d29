// A hosted server that holds `n` and reaches a host its list does not name:
// the refusal it gets (from Deno's --allow-net of its grant, or from the
// egress proxy) names the operator's change, servers.<name>.net in
// permissions.json, never "give the tool the letter n" (a server holds a
// letter by its list alone). The unlisted host is a live canary server that
// must never be reached.
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Registry } from "../../../core/registry/registry.ts";
import { fixtureServer, HOSTED_FIXTURES } from "../../../testing/mod.ts";
import { approve, type HostedLayout, hostedLayout, hostedRegistry } from "../../_hosted_helpers.ts";

const FIXTURE = join(HOSTED_FIXTURES, "hostile_server.ts");
const FIX = /add (it|the host) to servers\.hostile\.net in \S*permissions\.json/;

async function _approved(
  l: HostedLayout,
  command: string[],
  net: string[],
): Promise<Registry> {
  const servers = { hostile: { command } };
  const first = await hostedRegistry(l, servers, { hostile: { net } });
  await approve(first.registry, "hostile");
  await first.registry.close();
  return (await hostedRegistry(l, servers, { hostile: { net } })).registry;
}

function _canary(): { server: Deno.HttpServer<Deno.NetAddr>; hits: () => number } {
  let hits = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    hits++;
    return new Response("CANARY-SECRET");
  });
  return { server, hits: () => hits };
}

Deno.test("hosted server holding n, under Deno's --allow-net list: an unlisted host's refusal names servers.<name>.net", async () => {
  await using l = await hostedLayout();
  const canary = _canary();
  const listed = "127.0.0.1:9";
  const command = fixtureServer(FIXTURE, {
    flags: ["--allow-env", "--allow-read", `--allow-net=${listed}`],
  });
  const registry = await _approved(l, command, [listed]);
  try {
    for (let i = 0; i < 3; i++) {
      const r = await registry.call("connect", {
        host: "127.0.0.1",
        port: String(canary.server.addr.port),
      });
      assert.equal(r.success, false);
      const error = String(r.error);
      assert.match(error, /server "hostile" may not net "127\.0\.0\.1:\d+"/, error);
      assert.match(error, FIX, error);
      assert.doesNotMatch(error, /letter/, error);
    }
    assert.equal(canary.hits(), 0);
  } finally {
    await registry.close();
    await canary.server.shutdown();
  }
});

Deno.test("hosted server holding n, through the egress proxy: an unlisted host's refusal names servers.<name>.net", async () => {
  await using l = await hostedLayout();
  const canary = _canary();
  const command = fixtureServer(FIXTURE);
  const registry = await _approved(l, command, ["127.0.0.1:9"]);
  try {
    const url = `http://127.0.0.1:${canary.server.addr.port}/`;
    const r = await registry.call("fetch", { url });
    const text = JSON.stringify(r);
    assert.match(text, /status 403/, text);
    assert.match(text, /is not on the net list of servers\.hostile/, text);
    assert.match(text, FIX, text);
    assert.doesNotMatch(text, /CANARY-SECRET|letter/, text);
    assert.equal(canary.hits(), 0);
  } finally {
    await registry.close();
    await canary.server.shutdown();
  }
  const refused = (await Deno.readTextFile(l.audit)).split("\n").filter(Boolean).map((x) =>
    JSON.parse(x)
  ).filter((r) => r.kind === "connection" && r.verdict === "refused");
  assert.ok(refused.length > 0);
  assert.match(JSON.stringify(refused), /servers\.hostile\.net in \S*permissions\.json/);
});
