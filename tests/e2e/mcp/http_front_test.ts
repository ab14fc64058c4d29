// corral mcp --http against slow and greedy clients, with raw TCP sockets:
// a request head that does not arrive whole within --head-timeout is
// answered 408 and dropped (slowloris), one client address holds at most
// --max-client-conns connections (beyond: 429), and the server keeps
// answering everyone else throughout.
import assert from "node:assert/strict";
import { startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";

const LIST = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });

function _request(url: URL, body = LIST): string {
  return `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n` +
    `Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n` +
    `Content-Length: ${new TextEncoder().encode(body).length}\r\n\r\n${body}`;
}

/** Everything the server sends until it closes the connection (or `limitMs` passes: then "OPEN"). */
async function _readAll(conn: Deno.Conn, limitMs = 20_000): Promise<string> {
  const chunks: Uint8Array[] = [];
  const buf = new Uint8Array(65536);
  let open = false;
  const stop = setTimeout(() => {
    open = true; // still open at the limit: closed here, not by the server
    conn.close();
  }, limitMs);
  try {
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      chunks.push(buf.slice(0, n));
    }
  } catch {
    /* reset by the server after its answer, or closed at the limit */
  } finally {
    clearTimeout(stop);
  }
  const text = new TextDecoder().decode(
    chunks.reduce((a, b) => new Uint8Array([...a, ...b]), new Uint8Array()),
  );
  return open ? `OPEN ${text}` : text;
}

async function _listed(url: string): Promise<boolean> {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": "2025-06-18",
    },
    body: LIST,
  });
  return res.status === 200 && /"WordCount"/.test(await res.text());
}

Deno.test("slowloris: partial request heads are answered 408 and dropped after --head-timeout; the server keeps serving", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--stateless", "--head-timeout", "1"],
    ws,
  );
  const url = new URL(corral.url);
  const port = Number(url.port);
  const slow: Deno.Conn[] = [];
  for (let i = 0; i < 20; i++) {
    const c = await Deno.connect({ hostname: "127.0.0.1", port });
    // A head that never ends: one header line, then silence (or nothing at all).
    if (i % 2 === 0) {
      await c.write(new TextEncoder().encode(`POST /mcp HTTP/1.1\r\nHost: ${url.host}\r\n`));
    }
    slow.push(c);
  }
  // Meanwhile, whole requests are served.
  assert.ok(await _listed(corral.url));
  const answers = await Promise.all(slow.map((c) => _readAll(c)));
  for (const a of answers) {
    assert.doesNotMatch(a, /^OPEN/, "the server closed the connection itself");
    assert.match(a, /^HTTP\/1\.1 408 Request Timeout/);
    assert.match(a, /no complete request head within 1 s \(--head-timeout\)/);
  }
  // A head sent a byte at a time, slower than the limit in all, is dropped too.
  const drip = await Deno.connect({ hostname: "127.0.0.1", port });
  const head = new TextEncoder().encode(_request(url));
  const reading = _readAll(drip);
  let ended = false;
  reading.then(() => ended = true);
  for (let i = 0; i < head.length && !ended; i++) {
    await drip.write(head.subarray(i, i + 1)).catch(() => 0);
    await new Promise((r) => setTimeout(r, 100));
  }
  const dripped = await reading;
  assert.match(dripped, /408 Request Timeout/);
  assert.doesNotMatch(dripped, /"WordCount"/);
  assert.ok(await _listed(corral.url), "the host still answers");
});

Deno.test("one client address holds at most --max-client-conns: a connection without a whole head gives way to a new one; beyond connections with heads, 429; a freed slot serves again", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(
    [
      ...["--http", "127.0.0.1:0", "--stateless", "--max-client-conns", "3"],
      ...["--head-timeout", "60", "--body-timeout", "60", "--min-body-rate", "0"],
    ],
    ws,
  );
  const url = new URL(corral.url);
  const port = Number(url.port);
  // Three connections that never finish their heads: a real request pushes out the oldest.
  const headless: Deno.Conn[] = [];
  for (let i = 0; i < 3; i++) {
    const c = await Deno.connect({ hostname: "127.0.0.1", port });
    await c.write(new TextEncoder().encode(`POST ${url.pathname} HTTP/1.1\r\n`));
    headless.push(c);
    await new Promise((r) => setTimeout(r, 50)); // in this order
  }
  // A connection gets a second to send its head before it can be pushed out.
  await new Promise((r) => setTimeout(r, 1200));
  const real = await Deno.connect({ hostname: "127.0.0.1", port });
  await real.write(new TextEncoder().encode(_request(url)));
  const answer = await _readAll(real);
  assert.match(answer, /^HTTP\/1\.1 200/);
  assert.match(answer, /"WordCount"/);
  assert.doesNotMatch(await _readAll(headless[0], 5_000), /^OPEN/, "the oldest gave way");
  assert.match(await _readAll(headless[1], 500), /^OPEN/, "the others are still open");
  headless[2].close();
  // Three connections that sent their heads and send their bodies slowly: they are requests,
  // not given up for a newcomer; beyond them the newcomer is refused.
  const slow: Deno.Conn[] = [];
  const head =
    `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n` +
    `Accept: application/json, text/event-stream\r\nContent-Length: ${LIST.length}\r\n\r\n`;
  for (let i = 0; i < 3; i++) {
    const c = await Deno.connect({ hostname: "127.0.0.1", port });
    await c.write(new TextEncoder().encode(head + LIST.slice(0, 5)));
    slow.push(c);
  }
  await new Promise((r) => setTimeout(r, 300));
  for (let i = 0; i < 3; i++) {
    const extra = await Deno.connect({ hostname: "127.0.0.1", port });
    await extra.write(new TextEncoder().encode(_request(url))).catch(() => 0);
    const answer = await _readAll(extra);
    assert.match(answer, /^HTTP\/1\.1 429 Too Many Requests/);
    assert.match(answer, /Retry-After: 5/);
    assert.match(
      answer,
      /Too many connections from 127\.0\.0\.1: 3 at once \(--max-client-conns\)/,
    );
    assert.doesNotMatch(answer, /"WordCount"/);
  }
  // One slow request finishes its body: served, then closed; its slot serves a fresh one.
  await slow[0].write(new TextEncoder().encode(LIST.slice(5)));
  assert.match(await _readAll(slow[0]), /"WordCount"/);
  const fresh = await Deno.connect({ hostname: "127.0.0.1", port });
  await fresh.write(new TextEncoder().encode(_request(url)));
  assert.match(await _readAll(fresh), /"WordCount"/);
  for (const c of slow.slice(1)) c.close();
});

Deno.test("--head-timeout and --max-client-conns are checked and only apply with --http", async () => {
  const { runMcpCommand } = await import("../../../core/cli/_mcp_command.ts");
  const registry = {
    loaded: () => [],
    list: () => [],
    call: () => Promise.reject(),
    unknownToolMessage: () => "",
  };
  await assert.rejects(
    runMcpCommand(registry as never, { headTimeout: "5" }),
    /--head-timeout only applies with --http/,
  );
  await assert.rejects(
    runMcpCommand(registry as never, { http: "127.0.0.1:0", maxClientConns: "none" }),
    /--max-client-conns must be a positive integer, got "none"/,
  );
});
