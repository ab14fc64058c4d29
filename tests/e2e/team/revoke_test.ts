// Revocation stops everything the token started: alice's RunBashCode call is in flight (with
// a background process of its own) when her token is revoked. Within 5 s the call is stopped,
// audited denied/revoked, her session is gone and its sandbox killed: nothing the call would
// still have done (a file written later, by the call or by its background process) happens.
// Bob's session goes on.
import assert from "node:assert/strict";
import { join } from "node:path";
import { readAudit } from "../../../core/audit/mod.ts";
import { revokeToken } from "../../../core/identity/token_store.ts";
import { openSession, postHeaders, rpcAnswers, teamCorral, toolCall } from "../../_team_helpers.ts";

async function _exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Processes whose command line holds `marker` (the sandbox's `sleep`s). */
function _running(marker: string): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmd = Deno.readTextFileSync(`/proc/${e.name}/cmdline`).replaceAll("\0", " ");
      if (cmd.includes(marker)) out.push(Number(e.name));
    } catch { /* gone */ }
  }
  return out;
}

Deno.test("revoking a token mid-call stops the call and everything it started within 5 s; nothing runs after", async () => {
  await using t = await teamCorral({ alice: {}, bob: {} }, ["-x"]);
  const ws = t.ws.dir;
  const alice = String(await openSession(t.url, t.tokens.alice));
  const bob = String(await openSession(t.url, t.tokens.bob));
  // Unusual sleep lengths mark the sandbox's processes.
  const code = "(sleep 6.417; echo bg > late_bg.txt) & sleep 5.123; echo fg > late_fg.txt";
  const call = fetch(t.url, {
    method: "POST",
    headers: postHeaders(t.tokens.alice, alice),
    body: JSON.stringify(toolCall(1, "RunBashCode", { code, timeout: 30 })),
  }).then(async (r) => ({ status: r.status, text: await r.text().catch(() => "") }));
  // Its process runs (what it writes reaches the workspace only when its layer is settled).
  for (let i = 0; i < 200 && !_running("sleep 5.123").length; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(_running("sleep 5.123").length > 0, "the call started");
  const revokedAt = performance.now();
  assert.equal(await revokeToken("alice", join(t.ws.cache, "config", "tokens.json")), true);
  const ended = await call;
  const took = performance.now() - revokedAt;
  assert.ok(took < 5_000, `the call ended ${Math.round(took)} ms after the revocation`);
  assert.doesNotMatch(ended.text, /"success": true/);
  // Its processes are gone within the same 5 s.
  for (let i = 0; i < 100 && _running("sleep 5.123").concat(_running("sleep 6.417")).length; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(_running("sleep 5.123").concat(_running("sleep 6.417")), []);
  assert.ok(performance.now() - revokedAt < 5_000, "processes killed within 5 s");
  // Past the moments the call and its background process would have written: nothing.
  await new Promise((r) => setTimeout(r, 7_000));
  assert.equal(await _exists(join(ws, "late_fg.txt")), false, "the call ran on");
  assert.equal(await _exists(join(ws, "late_bg.txt")), false, "its background process ran on");
  // Her token opens nothing; her session is gone. Bob's goes on.
  const again = await fetch(t.url, {
    method: "POST",
    headers: postHeaders(t.tokens.alice, alice),
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
  });
  assert.equal(again.status, 401);
  await again.body?.cancel();
  const b = await fetch(t.url, {
    method: "POST",
    headers: postHeaders(t.tokens.bob, bob),
    body: JSON.stringify(toolCall(3, "RunBashCode", { code: "echo bob" })),
  });
  assert.match(JSON.stringify(await rpcAnswers(b)), /bob/);
  await t.stop();
  const lines = (await readAudit(t.audit, { identity: "alice", tool: "RunBashCode" })).records;
  assert.ok(
    lines.some((l) => l.outcome === "denied" && l.reason === "revoked"),
    JSON.stringify(lines),
  );
});
