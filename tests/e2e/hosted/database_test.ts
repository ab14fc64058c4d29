// Databases hosted in the jail, over their own protocols: the real
// @modelcontextprotocol/server-postgres@0.6.2 queries a real PostgreSQL, and
// @modelcontextprotocol/server-redis@2025.4.25 sets and gets against a real
// redis-server, both started here on free ports (tests/_services.ts). Each
// server is granted one `host:port` (an address for PostgreSQL, a name for
// Redis) and reaches it through its forwarder inside the namespace and the
// egress proxy (audited): an npm server's own node:net connection straight to
// the proxy (core/egress/forward_direct.ts), any other client through the
// bridge's forwarder. A hostile server granted the same Redis port tries
// another local port, with a canary listening by TCP (127.0.0.1 and ::1) and
// UDP, every way it can: it is never reached.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  fixtureServer,
  HOSTED_FIXTURES,
  startCanary,
  startPostgres,
  startRedis,
} from "../../../testing/mod.ts";
import { approve, type HostedLayout, hostedLayout, hostedRegistry } from "../../_hosted_helpers.ts";
import type { Registry } from "../../../core/registry/registry.ts";

const POSTGRES = "@modelcontextprotocol/server-postgres@0.6.2";
const REDIS = "@modelcontextprotocol/server-redis@2025.4.25";

async function _registry(
  l: HostedLayout,
  servers: Record<string, unknown>,
  perms: Record<string, unknown>,
): Promise<Registry> {
  const first = await hostedRegistry(l, servers, perms);
  for (const name of Object.keys(servers)) await approve(first.registry, name);
  await first.registry.close();
  return (await hostedRegistry(l, servers, perms)).registry;
}

function _audit(l: HostedLayout): Array<Record<string, unknown>> {
  return Deno.readTextFileSync(l.audit).split("\n").filter(Boolean).map((x) => JSON.parse(x));
}

Deno.test("server-postgres in the jail, granted 127.0.0.1:PORT, queries a real PostgreSQL through its forwarder; the connection is audited", async () => {
  await using pg = await startPostgres(
    "CREATE TABLE pets (name text, legs int); INSERT INTO pets VALUES ('ada', 4), ('kiwi', 2);",
  );
  await using l = await hostedLayout();
  const url = `postgresql://corral@127.0.0.1:${pg.port}/postgres`;
  const servers = { postgres: { npm: POSTGRES, args: [url], confirm: { query: false } } };
  const registry = await _registry(l, servers, { postgres: { net: [`127.0.0.1:${pg.port}`] } });
  try {
    const r = await registry.call("query", { sql: "SELECT name, legs FROM pets ORDER BY name" });
    assert.equal(r.success, true, JSON.stringify(r));
    assert.deepEqual(JSON.parse(String(r.result)), [
      { name: "ada", legs: 4 },
      { name: "kiwi", legs: 2 },
    ]);
    // Its read-only transaction holds: a write is the server's own refusal, by PostgreSQL.
    const w = await registry.call("query", { sql: "INSERT INTO pets VALUES ('x', 1)" });
    assert.match(JSON.stringify(w), /read-only transaction/);
  } finally {
    await registry.close();
  }
  const conns = _audit(l).filter((r) => r.kind === "connection" && r.toolset === "postgres");
  assert.ok(conns.length >= 1, "no connection line");
  for (const c of conns) {
    assert.equal(`${c.host}:${c.port}`, `127.0.0.1:${pg.port}`);
    assert.equal(c.verdict, "allowed");
    // The npm server's own connection went straight to the proxy (core/egress/forward_direct.ts).
    assert.equal(c.via, "direct");
  }
  assert.ok(conns.some((c) => Number(c.bytes_in) > 0 && Number(c.bytes_out) > 0));
});

Deno.test("server-redis in the jail, granted localhost:PORT by name, sets and gets against a real redis-server; a hostile server with the same grant never reaches a canary on another port, by any protocol", async () => {
  await using redis = await startRedis();
  await using canary = await startCanary();
  await using l = await hostedLayout();
  const hostile = join(HOSTED_FIXTURES, "hostile_server.ts");
  const grant = { net: [`localhost:${redis.port}`] };
  const servers = {
    redis: {
      npm: REDIS,
      args: [`redis://localhost:${redis.port}`],
      confirm: { set: false, get: false, list: false },
    },
    hostile: { command: fixtureServer(hostile) },
  };
  const registry = await _registry(l, servers, { redis: grant, hostile: grant });
  try {
    const set = await registry.call("set", { key: "pet", value: "ada the cat" });
    assert.equal(set.success, true, JSON.stringify(set));
    const got = await registry.call("get", { key: "pet" });
    assert.match(String(got.result), /ada the cat/, JSON.stringify(got));
    const listed = await registry.call("list", { pattern: "*" });
    assert.match(String(listed.result), /pet/);

    // The forwarder is any TCP protocol: the hostile server speaks RESP to its granted port.
    const ping = await registry.call("connect", {
      host: "localhost",
      port: String(redis.port),
      send: "PING\r\n",
    });
    assert.match(String(ping.result), /\+PONG/, JSON.stringify(ping));

    const c = String(canary.port);
    const attacks: Array<[string, Record<string, string>]> = [
      ["connect", { host: "127.0.0.1", port: c }],
      ["connect", { host: "localhost", port: c }],
      ["connect", { host: "::1", port: c }],
      ["connect", { host: "127.0.0.2", port: c }],
      // The granted port at another loopback address: no forwarder there.
      ["connect", { host: "127.0.0.3", port: String(redis.port) }],
      ["udp", { host: "127.0.0.1", port: c }],
      ["udp", { host: "::1", port: c }],
      ["fetch", { url: `http://127.0.0.1:${c}/` }],
      ["fetch", { url: `http://localhost:${c}/` }],
      // Straight to the proxy's socket, saying it is a server's own forwarder.
      ["connect", {
        path: "/tmp/.corral-egress/egress.sock",
        send: `CONNECT 127.0.0.1:${c} HTTP/1.1\r\nX-Corral-Forward: direct\r\n\r\n`,
      }],
    ];
    const answers = [];
    for (const [tool, args] of attacks) answers.push(await registry.call(tool, args));
    assert.match(
      String(answers.at(-1)!.result),
      /^connected: HTTP\/1\.1 403/,
      JSON.stringify(answers.at(-1)),
    );
    // Racing: many at once.
    await Promise.all(
      Array.from(
        { length: 20 },
        (_, i) => registry.call(i % 2 ? "connect" : "udp", { host: "127.0.0.1", port: c }),
      ),
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(canary.hits, [], `the canary was reached: ${canary.hits}`);
    // The host still answers, and so does redis through the forwarder.
    assert.match(String((await registry.call("get", { key: "pet" })).result), /ada the cat/);
  } finally {
    await registry.close();
  }
  const conns = _audit(l).filter((r) => r.kind === "connection");
  const redisConns = conns.filter((r) => r.toolset === "redis");
  assert.ok(redisConns.length >= 1);
  assert.ok(redisConns.every((r) => r.host === "localhost" && r.port === redis.port));
  assert.ok(redisConns.every((r) => r.via === "direct"), JSON.stringify(redisConns));
  // The hostile server's own PING to the granted port came through the bridge's forwarder.
  const hostileOk = conns.filter((r) => r.toolset === "hostile" && r.verdict === "allowed");
  assert.ok(hostileOk.some((r) => r.port === redis.port && r.via === "forwarder"));
  // The hostile server's way to the canary through the proxy was refused there, and audited.
  const refused = conns.filter((r) => r.toolset === "hostile" && r.verdict === "refused");
  assert.ok(refused.some((r) => r.port === canary.port), JSON.stringify(conns));
});
