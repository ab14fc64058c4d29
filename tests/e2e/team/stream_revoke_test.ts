// An open GET stream (a session's server messages) of a token that is
// revoked is closed by the real HTTP server within a bounded time (the
// token is checked again every 5 s while the stream is open); reconnecting
// with that token gets 401. Another identity's open stream goes on.
import assert from "node:assert/strict";
import { join } from "node:path";
import { addToken, revokeToken } from "../../../core/identity/token_store.ts";
import { INIT_BODY } from "../../../testing/mod.ts";
import { startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";

const HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-06-18",
};

async function _session(url: string, token: string): Promise<string> {
  const auth = { authorization: `Bearer ${token}` };
  const init = await fetch(url, {
    method: "POST",
    headers: { ...HEADERS, ...auth },
    body: INIT_BODY,
  });
  assert.equal(init.status, 200);
  await init.body?.cancel();
  const sid = init.headers.get("mcp-session-id");
  assert.ok(sid);
  const done = await fetch(url, {
    method: "POST",
    headers: { ...HEADERS, ...auth, "mcp-session-id": sid },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  await done.body?.cancel();
  return sid;
}

function _get(url: string, token: string, sid: string): Promise<Response> {
  return fetch(url, {
    headers: { ...HEADERS, authorization: `Bearer ${token}`, "mcp-session-id": sid },
  });
}

/** Whether the stream ends within `ms` (false: still open). */
async function _endsWithin(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"open">((r) => timer = setTimeout(() => r("open"), ms));
  try {
    for (;;) {
      const next = await Promise.race([reader.read(), timeout]);
      if (next === "open") return false;
      if (next.done) return true;
    }
  } catch {
    return true; // reset by the server: ended too
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("a revoked token's open GET stream is closed within the re-check period; another identity's stays open", async () => {
  await using ws = await tempWorkspace();
  const configDir = join(ws.cache, "config");
  await Deno.mkdir(configDir, { recursive: true });
  await Deno.writeTextFile(
    join(configDir, "corral.json"),
    JSON.stringify({
      identities: {
        alice: { workspace: ws.dir, shared_workspace: true },
        bob: { workspace: ws.dir, shared_workspace: true },
      },
    }),
  );
  const tokensFile = join(configDir, "tokens.json");
  const alice = await addToken("alice", tokensFile);
  const bob = await addToken("bob", tokensFile);
  await using server = await startHttpCorral(["--http", "127.0.0.1:0", "--keep-token"], ws);
  const [sa, sb] = [await _session(server.url, alice), await _session(server.url, bob)];
  const [ga, gb] = [await _get(server.url, alice, sa), await _get(server.url, bob, sb)];
  assert.equal(ga.status, 200);
  assert.equal(gb.status, 200);
  assert.match(ga.headers.get("content-type") ?? "", /text\/event-stream/);
  const [ra, rb] = [ga.body!.getReader(), gb.body!.getReader()];
  try {
    // Both stay open across more than one re-check while their tokens are valid.
    assert.equal(await _endsWithin(ra, 6_000), false, "alice's stream closed while valid");
    assert.equal(await revokeToken("alice", tokensFile), true);
    // Bounded: the next re-check (5 s) closes it; 15 s leaves room on a loaded machine.
    assert.equal(await _endsWithin(ra, 15_000), true, "the revoked token's stream is still open");
    assert.equal(await _endsWithin(rb, 6_000), false, "bob's stream closed too");
    const again = await _get(server.url, alice, sa);
    assert.equal(again.status, 401);
    await again.body?.cancel();
  } finally {
    await ra.cancel().catch(() => {});
    await rb.cancel().catch(() => {});
  }
});
