// Slow clients against corral mcp --http, all from one address (as behind a proxy, or on
// loopback): 250 connections trickle a 1 MB body a byte at a time and 100 more trickle their
// request heads, together more than --max-client-conns. A real client beside them is still
// served at every request (a new connection pushes out one that has not sent a whole head in
// its first second);
// every trickled body gets 408 once --body-timeout passes, and its connection is closed.
import assert from "node:assert/strict";
import { startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";

const LIST = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });

/** Read until the server closes (or `limitMs`: then what came, prefixed "OPEN"). */
async function _answer(conn: Deno.Conn, limitMs: number): Promise<string> {
  const buf = new Uint8Array(4096);
  let text = "";
  const stop = setTimeout(() => {
    text = `OPEN ${text}`;
    try {
      conn.close();
    } catch { /* closed */ }
  }, limitMs);
  try {
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
  } catch { /* reset after the answer, or closed at the limit */ }
  clearTimeout(stop);
  return text;
}

const JSON_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

Deno.test("trickled bodies and heads from one address do not lock out a real client; each trickled body gets 408 after --body-timeout", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--stateless", "--body-timeout", "4", "--head-timeout", "30"],
    ws,
  );
  const url = new URL(corral.url);
  const port = Number(url.port);
  const head = `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\n` +
    "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
    "Content-Length: 1048576\r\n\r\n";
  let trickling = true;
  const bodies: Array<Promise<string>> = [];
  for (let i = 0; i < 250; i++) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(new TextEncoder().encode(head + "["));
    // The client's own limit, far past --body-timeout (a loaded machine takes its time).
    const answer = _answer(conn, 60_000);
    (async () => {
      while (trickling) {
        await new Promise((r) => setTimeout(r, 200));
        if (await conn.write(new TextEncoder().encode(" ")).catch(() => 0) === 0) return;
      }
    })();
    bodies.push(answer);
  }
  const heads: Deno.Conn[] = [];
  for (let i = 0; i < 100; i++) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(new TextEncoder().encode(`POST ${url.pathname} HTTP/1.1\r\n`)).catch(() => 0);
    heads.push(conn);
  }
  // The tricklers hold their connections (a second: the grace a new connection has to send
  // its head, counted from when the server took it). One request answered, whatever its
  // status, shows the server has taken every connection before it (in order); a second later
  // all of them are past their grace. The real client, while all of that goes on: served
  // every time.
  await (await fetch(corral.url, { method: "POST", headers: JSON_HEADERS, body: LIST })).body
    ?.cancel();
  await new Promise((r) => setTimeout(r, 1200));
  for (let i = 0; i < 10; i++) {
    const r = await fetch(corral.url, { method: "POST", headers: JSON_HEADERS, body: LIST });
    assert.equal(r.status, 200, `real request ${i + 1}: ${r.status}`);
    assert.match(await r.text(), /"WordCount"/);
    await new Promise((r) => setTimeout(r, 200));
  }
  const answers = await Promise.all(bodies);
  trickling = false;
  for (const c of heads) {
    try {
      c.close();
    } catch { /* closed by the server */ }
  }
  // Each was answered 408 for its body's time and closed by the server: none was still open
  // at the client's own limit (that answer would start "OPEN").
  const odd = answers.filter((a) =>
    !/^HTTP\/1\.1 408 Request Timeout/.test(a) || !/--body-timeout/.test(a)
  );
  assert.deepEqual(odd.map((a) => a.slice(0, 300)), []);
  // And the server still answers.
  const after = await fetch(corral.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: LIST,
  });
  assert.equal(after.status, 200);
  await after.body?.cancel();
});
