// What one member can do to what the members share, done for real against `corral mcp
// --http` (a process, static tokens): a 30-call batch under per_minute 3, a forged
// Mcp-Session-Id in the audit, 300 sessions by one member, pinged sessions that never expire,
// requests in flight per identity. Each checks that the attack no longer works and that
// another member is still served.
import assert from "node:assert/strict";
import { readAudit } from "../../../core/audit/mod.ts";
import { openSession, postHeaders, rpcAnswers, teamCorral, toolCall } from "../../_team_helpers.ts";

const SLEEP = "E2eSleep"; // tests/fixtures/mcp_plugins/mcp_steps.ts

Deno.test("a 30-call batch under per_minute 3 runs 3 calls; the rest are refused and audited under the caller's own session, never a header", async () => {
  await using t = await teamCorral({ alice: { limits: { per_minute: 3 } }, bob: {} });
  let bobSid = "";
  try {
    const sid = await openSession(t.url, t.tokens.alice);
    assert.equal(typeof sid, "string");
    bobSid = String(await openSession(t.url, t.tokens.bob));
    const batch = Array.from({ length: 30 }, (_, i) => toolCall(i + 1, SLEEP, { ms: 0 }));
    const r = await fetch(t.url, {
      method: "POST",
      headers: postHeaders(t.tokens.alice, String(sid)),
      body: JSON.stringify(batch),
    });
    assert.equal(r.status, 200);
    const answers = await rpcAnswers(r);
    assert.equal(answers.length, 30);
    const ran = answers.filter((a) => !(a.result as { isError?: boolean })?.isError);
    assert.equal(ran.length, 3, "3 calls a minute: 3 of the batch ran");
    for (const a of answers.filter((a) => (a.result as { isError?: boolean })?.isError)) {
      assert.match(JSON.stringify(a), /alice\\" may make 3 calls per minute/);
    }
    // The next request: 429 with Retry-After; also when it names bob's session.
    for (const header of [String(sid), bobSid]) {
      const again = await fetch(t.url, {
        method: "POST",
        headers: postHeaders(t.tokens.alice, header),
        body: JSON.stringify(toolCall(99, SLEEP, { ms: 0 })),
      });
      assert.equal(again.status, 429);
      assert.ok(Number(again.headers.get("retry-after")) >= 1);
      await again.body?.cancel();
    }
    // Bob is not limited by alice's bucket.
    const b = await fetch(t.url, {
      method: "POST",
      headers: postHeaders(t.tokens.bob, bobSid),
      body: JSON.stringify(Array.from({ length: 10 }, (_, i) => toolCall(i + 1, SLEEP, { ms: 0 }))),
    });
    const bobAnswers = await rpcAnswers(b);
    assert.equal(
      bobAnswers.filter((a) => !(a.result as { isError?: boolean })?.isError).length,
      10,
    );
  } finally {
    await t.stop();
  }
  // Written when the server closed: the first refusal in full, the rest counted.
  const read = await readAudit(t.audit, { identity: "alice" });
  const refused = read.records.filter((r) => r.outcome === "denied");
  const counted = read.refusals.reduce((n, w) => n + w.count, 0);
  assert.equal(refused.length + counted, 29, "27 of the batch, 2 single calls");
  assert.equal(read.records.filter((r) => r.outcome === "success").length, 3);
  for (const r of read.records) {
    assert.match(r.session, /^session:[0-9a-f-]{36}$|^\(none\)$/, `session ${r.session}`);
  }
  const text = await Deno.readTextFile(t.audit);
  assert.ok(bobSid && !text.includes(bobSid), "bob's Mcp-Session-Id is nowhere in the audit");
});

Deno.test("one member opening 300 sessions is refused beyond its cap (429); another member still opens one", async () => {
  await using t = await teamCorral({ alice: {}, bob: {} }, ["--max-identity-sessions", "20"]);
  const statuses: Array<string | number> = [];
  for (let i = 0; i < 300; i += 30) {
    statuses.push(
      ...await Promise.all(Array.from({ length: 30 }, () => openSession(t.url, t.tokens.alice))),
    );
  }
  assert.equal(statuses.filter((s) => typeof s === "string").length, 20);
  assert.equal(statuses.filter((s) => s === 429).length, 280);
  const bob = await openSession(t.url, t.tokens.bob);
  assert.equal(typeof bob, "string", `bob got ${bob}`);
  const list = await fetch(t.url, {
    method: "POST",
    headers: postHeaders(t.tokens.bob, String(bob)),
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
  });
  assert.match(JSON.stringify(await rpcAnswers(list)), /E2eSleep/);
});

Deno.test("an idle session expires although it is pinged: pings are not use", async () => {
  await using t = await teamCorral({ alice: {} }, ["--session-idle", "2"]);
  const pinged = String(await openSession(t.url, t.tokens.alice));
  const used = String(await openSession(t.url, t.tokens.alice));
  const post = (sid: string, body: unknown) =>
    fetch(t.url, {
      method: "POST",
      headers: postHeaders(t.tokens.alice, sid),
      body: JSON.stringify(body),
    });
  for (let i = 0; i < 10; i++) {
    const p = await post(pinged, { jsonrpc: "2.0", id: 100 + i, method: "ping" });
    await p.body?.cancel();
    const u = await post(used, { jsonrpc: "2.0", id: 200 + i, method: "tools/list" });
    assert.equal(u.status, 200);
    await u.body?.cancel();
    await new Promise((r) => setTimeout(r, 500));
  }
  // 5 s of pings, 2 s idle allowed: gone. The session that was used is still there.
  const gone = await post(pinged, { jsonrpc: "2.0", id: 1, method: "tools/list" });
  assert.equal(gone.status, 404);
  await gone.body?.cancel();
  const alive = await post(used, { jsonrpc: "2.0", id: 2, method: "tools/list" });
  assert.equal(alive.status, 200);
  await alive.body?.cancel();
});

Deno.test("requests in flight are capped per identity: open streams cannot take the server", async () => {
  await using t = await teamCorral({ alice: { limits: { connections: 2 } }, bob: {} });
  const sid = String(await openSession(t.url, t.tokens.alice));
  const streams: Response[] = [];
  // Two long POSTs of alice hold her two requests in flight.
  const calls = [1, 2].map((id) =>
    fetch(t.url, {
      method: "POST",
      headers: postHeaders(t.tokens.alice, sid),
      body: JSON.stringify(toolCall(id, SLEEP, { ms: 2000 })),
    })
  );
  await new Promise((r) => setTimeout(r, 500));
  const third = await fetch(t.url, {
    method: "POST",
    headers: postHeaders(t.tokens.alice, sid),
    body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }),
  });
  assert.equal(third.status, 429);
  assert.match((await third.json()).error.message, /"alice" may have 2 requests in flight/);
  const bob = await openSession(t.url, t.tokens.bob);
  assert.equal(typeof bob, "string", "bob is not held back");
  for (const c of await Promise.all(calls)) streams.push(c);
  // Her calls end (their answers read whole: the server freed each slot before its end was
  // sent; a client that hangs up instead is seen only once its connection's close arrives).
  for (const s of streams) assert.match(await s.text(), /"result"/);
  // Her calls ended: her slots are free again.
  const after = await fetch(t.url, {
    method: "POST",
    headers: postHeaders(t.tokens.alice, sid),
    body: JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/list" }),
  });
  assert.equal(after.status, 200);
  await after.body?.cancel();
});
