// A cancelled call is never answered (MCP), so over Streamable HTTP its POST's stream must be
// ended by the server, or its connection stays open for the session's life: a day's session
// with one cancellation in 20 calls reached the per-client connection cap after about 5,000
// calls (bench section 13) and was refused. Spoken raw, so that nothing of a client ends it.
import assert from "node:assert/strict";
import { INIT_BODY, MCP_POST_HEADERS } from "../../../testing/mod.ts";
import { startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";

async function _post(url: string, sid: string, body: unknown): Promise<Response> {
  return await fetch(url, {
    method: "POST",
    headers: {
      ...MCP_POST_HEADERS,
      "mcp-session-id": sid,
      "mcp-protocol-version": "2025-06-18",
    },
    body: JSON.stringify(body),
  });
}

/** The whole body of `res`, or undefined if it has not ended after `ms` (then it is cancelled). */
async function _ended(res: Response, ms: number): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((r) => timer = setTimeout(() => r(undefined), ms));
  try {
    return await Promise.race([res.text(), late]);
  } finally {
    clearTimeout(timer);
    await res.body?.cancel().catch(() => {});
  }
}

/** A session opened and initialized on `url`; its id. */
async function _session(url: string): Promise<string> {
  const init = await fetch(url, { method: "POST", headers: MCP_POST_HEADERS, body: INIT_BODY });
  const sid = init.headers.get("mcp-session-id")!;
  assert.ok(sid, "no session");
  await init.body?.cancel();
  (await _post(url, sid, { jsonrpc: "2.0", method: "notifications/initialized" })).body
    ?.cancel();
  return sid;
}

function _sleep(id: number, ms: number) {
  return {
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "E2eSleep", arguments: { ms } },
  };
}

async function _cancel(url: string, sid: string, id: number): Promise<void> {
  const cancel = await _post(url, sid, {
    jsonrpc: "2.0",
    method: "notifications/cancelled",
    params: { requestId: id, reason: "the user gave up" },
  });
  assert.equal(cancel.status, 202);
  await cancel.body?.cancel();
}

Deno.test("a cancelled call's stream ends, and the session goes on", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0"], ws);
  const sid = await _session(corral.url);
  const call = (id: number, ms: number) => _post(corral.url, sid, _sleep(id, ms));
  // Control: a call that ends is answered, and its stream ends with it.
  const quick = await _ended(await call(2, 10), 60_000);
  assert.match(quick ?? "(never ended)", /"id":2/);
  for (const id of [3, 4, 5]) {
    const slow = await call(id, 120_000);
    assert.equal(slow.status, 200);
    await _cancel(corral.url, sid, id);
    // Not a timing goal: a stream that never ends is what fails (the call waits two minutes).
    const text = await _ended(slow, 60_000);
    assert.ok(text !== undefined, `call ${id}: its stream never ended after the cancellation`);
    assert.doesNotMatch(text, new RegExp(`"id":${id}`), "a cancelled call was answered");
  }
  // The session still serves.
  const after = await _ended(await call(6, 10), 60_000);
  assert.match(after ?? "(never ended)", /"slept":10|\\"slept\\":10/);
});

Deno.test("a POST of two calls, one cancelled before the other is answered: its stream ends with that answer", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0"], ws);
  const sid = await _session(corral.url);
  // One POST, two requests (a JSON-RPC batch): the SDK ends its stream once both are answered.
  const both = await _post(corral.url, sid, [_sleep(2, 120_000), _sleep(3, 3_000)]);
  assert.equal(both.status, 200);
  await _cancel(corral.url, sid, 2);
  const text = await _ended(both, 60_000);
  assert.ok(text !== undefined, "the stream never ended after its other call was answered");
  assert.match(text, /"id":3/);
  assert.doesNotMatch(text, /"id":2/, "a cancelled call was answered");
});
