// The shared state in a real Redis (tests/_redis.ts starts one): two replicas' states share
// the bucket, the session count and the revocations; an unreachable Redis is refused at start
// and, once lost, makes every use fail (closed), until it is back.
import assert from "node:assert/strict";
import { ConfigError } from "../tool/errors.ts";
import { freePort } from "../../tests/_helpers.ts";
import { startRedis } from "../../tests/_redis.ts";
import { RedisState } from "./redis_state.ts";

Deno.test("redis state: two replicas take from one bucket and count one identity's sessions together", async () => {
  await using redis = await startRedis();
  const a = await RedisState.connect(redis.url);
  const b = await RedisState.connect(redis.url);
  try {
    // 5 a minute, taken by two replicas: 5 in all, a batch counted per call.
    const first = await a.takeCalls("alice", 5, 3);
    const second = await b.takeCalls("alice", 5, 30);
    assert.equal(first.granted + second.granted, 5);
    assert.equal((await a.takeCalls("alice", 5, 1)).granted, 0);
    assert.ok((await b.takeCalls("alice", 5, 1)).retryAfterSeconds >= 1);
    assert.equal((await b.takeCalls("bob", 5, 1)).granted, 1, "bob has his own bucket");
    // Sessions: at most 2 for alice, whichever replica opens them.
    assert.ok(await a.openSession("alice", "s1", 2));
    assert.ok(await b.openSession("alice", "s2", 2));
    assert.ok(!(await a.openSession("alice", "s3", 2)));
    await b.closeSession("alice", "s2");
    assert.ok(await a.openSession("alice", "s3", 2));
    // A revocation on one replica is heard by the other.
    const heard = new Promise<string>((r) => b.onRevoked(r));
    await a.revoke("carol");
    assert.equal(await heard, "carol");
    assert.ok((b.revokedAt("carol") ?? 0) > Date.now() - 10_000);
    // And a replica that starts later loads it.
    const c = await RedisState.connect(redis.url);
    assert.equal(c.revokedAt("carol"), a.revokedAt("carol") ?? b.revokedAt("carol"));
    await c.close();
  } finally {
    await a.close();
    await b.close();
  }
});

Deno.test("redis state: a high limit is taken a second's worth at a time, and the replicas together never exceed it", async () => {
  await using redis = await startRedis();
  const a = await RedisState.connect(redis.url);
  const b = await RedisState.connect(redis.url);
  try {
    // 600 a minute: 10 taken at once from Redis, kept for a second.
    let granted = 0;
    const t0 = performance.now();
    for (let i = 0; i < 700; i++) {
      granted += (await (i % 2 ? a : b).takeCalls("ci", 600, 1)).granted;
    }
    // The bucket refills 10 a second meanwhile.
    const refilled = Math.ceil(((performance.now() - t0) / 1000) * 10);
    assert.ok(granted <= 600 + refilled, `${granted} granted`);
    assert.ok(granted >= 580, `${granted} granted: at most a lease per replica is lost`);
  } finally {
    await a.close();
    await b.close();
  }
});

Deno.test("redis state: unreachable at start is a config error; lost later, every use fails until it is back", async () => {
  const port = freePort();
  await assert.rejects(
    RedisState.connect(`redis://127.0.0.1:${port}`),
    (e) =>
      e instanceof ConfigError &&
      /cannot reach the shared state redis:\/\/127\.0\.0\.1/.test(e.message),
  );
  await using redis = await startRedis();
  const s = await RedisState.connect(redis.url);
  try {
    assert.equal(s.trouble, undefined);
    await redis.kill();
    await assert.rejects(s.takeCalls("alice", 5, 1), /shared state/);
    assert.match(s.trouble ?? "", /cannot be reached|revocations/);
    await redis.start();
    for (let i = 0; i < 100 && s.trouble; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(s.trouble, undefined, "reconnected");
    assert.equal((await s.takeCalls("alice", 5, 1)).granted, 1);
  } finally {
    await s.close();
  }
});
