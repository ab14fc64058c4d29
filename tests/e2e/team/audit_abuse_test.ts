// The audit log against a member who tries to fill it or forge it, for real through `corral
// mcp --http`: a member at its rate limit floods 100-call batches with a 30 KB Mcp-Session-Id,
// a 500 KB tool name, a tool name with a line feed, a token-guessing run. The log grows by a
// bounded amount, `corral audit` prints one row per tool whatever its name, and failed
// authentication is counted and audited per address with no token in it.
import assert from "node:assert/strict";
import { readAudit } from "../../../core/audit/mod.ts";
import { runCli } from "../../_helpers.ts";
import {
  openSession,
  OPERATOR_TOKEN,
  postHeaders,
  rpcAnswers,
  teamCorral,
  toolCall,
} from "../../_team_helpers.ts";

async function _size(path: string): Promise<number> {
  try {
    return (await Deno.stat(path)).size;
  } catch {
    return 0;
  }
}

Deno.test("a member at its rate limit flooding 100-call batches with a 30 KB session header adds a bounded amount to the audit log", async () => {
  await using t = await teamCorral({ alice: { limits: { per_minute: 1 } } });
  const sid = String(await openSession(t.url, t.tokens.alice));
  const one = await fetch(t.url, {
    method: "POST",
    headers: postHeaders(t.tokens.alice, sid),
    body: JSON.stringify(toolCall(1, "E2eSleep", { ms: 0 })),
  });
  await one.body?.cancel();
  const before = await _size(t.audit);
  const fat = "s".repeat(30 * 1024);
  const batch = JSON.stringify(
    Array.from({ length: 100 }, (_, i) => toolCall(i + 10, "E2eSleep", { ms: 0 })),
  );
  // 200 requests, 20 at a time (within her requests in flight).
  const statuses: number[] = [];
  for (let round = 0; round < 10; round++) {
    statuses.push(
      ...await Promise.all(Array.from({ length: 20 }, async () => {
        const r = await fetch(t.url, {
          method: "POST",
          headers: postHeaders(t.tokens.alice, fat),
          body: batch,
        });
        await r.body?.cancel();
        return r.status;
      })),
    );
  }
  assert.deepEqual([...new Set(statuses)], [429]);
  const grown = (await _size(t.audit)) - before;
  // 20,000 refused calls: one line in full, the rest counted (written at the window's end).
  assert.ok(grown < 16 * 1024, `the audit log grew by ${grown} bytes`);
  assert.ok(!(await Deno.readTextFile(t.audit)).includes(fat.slice(0, 256)), "no header value");
  await t.stop();
  const read = await readAudit(t.audit, { identity: "alice", outcome: "denied" });
  const counted = read.records.length + read.refusals.reduce((n, w) => n + w.count, 0);
  assert.equal(counted, 20_000, "every refused call is counted");
  assert.ok((await _size(t.audit)) - before < 20 * 1024);
});

Deno.test("a 500 KB tool name and a tool name with a line feed: short lines, and corral audit prints one escaped row each", async () => {
  await using t = await teamCorral({ alice: {} });
  const sid = String(await openSession(t.url, OPERATOR_TOKEN));
  const before = await _size(t.audit);
  const huge = "T".repeat(500_000);
  const started = performance.now();
  const r = await fetch(t.url, {
    method: "POST",
    headers: postHeaders(OPERATOR_TOKEN, sid),
    body: JSON.stringify(toolCall(1, huge)),
  });
  assert.match(JSON.stringify(await rpcAnswers(r)), /Unknown tool/);
  assert.ok(performance.now() - started < 5_000, "no 'did you mean' over half a megabyte");
  assert.ok((await _size(t.audit)) - before < 4096, "the line is capped");
  // The operator's first unknown_tool refusal was that one; alice forges a row of her own.
  const forged = "ReadFile\nWordCount   999  999  0  0  0  1";
  const asAlice = String(await openSession(t.url, t.tokens.alice));
  const f = await fetch(t.url, {
    method: "POST",
    headers: postHeaders(t.tokens.alice, asAlice),
    body: JSON.stringify(toolCall(2, forged)),
  });
  assert.match(JSON.stringify(await rpcAnswers(f)), /Unknown tool/);
  await t.stop();
  const out = await runCli(["audit", t.audit]);
  assert.equal(out.code, 0, out.stderr);
  const rows = out.stdout.trim().split("\n");
  assert.equal(rows.length, 3, out.stdout); // the header and two tools
  assert.ok(!rows.some((l) => l.startsWith("WordCount")), "no forged row");
  assert.ok(rows.some((l) => l.startsWith("ReadFile\\u000aWordCount")), out.stdout);
  const json = await runCli(["audit", t.audit, "--json"]);
  assert.equal(json.stdout.trim().split("\n").length, 2, "one JSON line per call line");
});

Deno.test("a token-guessing run is counted in /metrics and audited per address, with no token in either", async () => {
  await using t = await teamCorral({ alice: {} });
  const guesses = Array.from({ length: 60 }, (_, i) => `corral_${String(i).padStart(43, "g")}`);
  for (const g of guesses) {
    const r = await fetch(t.url, { method: "POST", headers: postHeaders(g), body: "{}" });
    assert.equal(r.status, 401);
    await r.body?.cancel();
  }
  const metricsToken = (await Deno.readTextFile(`${t.ws.cache}/config/metrics-token`)).trim();
  const metrics = await fetch(t.url.replace(/\/mcp$/, "/metrics"), {
    headers: { authorization: `Bearer ${metricsToken}` },
  });
  assert.match(await metrics.text(), /corral_auth_failures_total\{status="401"\} 60/);
  assert.match(t.corral.stderr(), /authentication failed from 127\.0\.0\.1: 401/);
  await t.stop();
  const text = await Deno.readTextFile(t.audit);
  const lines = text.trim().split("\n").map((l) => JSON.parse(l)).filter((l) => l.kind === "auth");
  assert.equal(lines[0].source, "127.0.0.1");
  assert.equal(lines[0].status, 401);
  const total = lines.reduce((n, l) => n + (l.count ?? 1), 0);
  assert.equal(total, 60, JSON.stringify(lines));
  assert.ok(lines.length <= 2, "one line per address per window, and its count");
  for (const g of guesses) {
    assert.ok(!text.includes(g.slice(7, 30)), "no token material in the audit log");
    assert.ok(!t.corral.stderr().includes(g.slice(7, 30)), "nor in the log");
  }
});
