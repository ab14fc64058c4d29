// The HTTP front blames a client only for its own slowness: when this
// process stalls (its event loop starved, as when 200 sandboxes start at once
// on two cores) after a client sent its whole request, the head timer and
// the head that arrived are ready in the same turn; the request is served,
// never answered 408. A client that sends nothing is still refused at its
// deadline (the control).
import assert from "node:assert/strict";
import { listenFront } from "../core/mcp/http_front.ts";

const REQUEST = "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";

/** Everything the front sends until it closes. */
async function _answer(conn: Deno.Conn): Promise<string> {
  const chunks: string[] = [];
  const buf = new Uint8Array(4096);
  const dec = new TextDecoder();
  try {
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      chunks.push(dec.decode(buf.subarray(0, n)));
    }
  } catch { /* reset after the answer */ }
  conn.close();
  return chunks.join("");
}

/** Keep this process busy for `ms`: no timer, no read runs meanwhile. */
function _stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) Math.random();
}

/** A connection the front has accepted (and so armed its head timer for). */
async function _accepted(port: number): Promise<Deno.Conn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await new Promise((r) => setTimeout(r, 100)); // a few turns: the front runs its accept
  return conn;
}

Deno.test("a request that arrived whole while the process stalled past the head timeout is served, not answered 408; a silent client still gets 408", async () => {
  const seen: string[] = [];
  const front = await listenFront(
    { hostname: "127.0.0.1", port: 0, headTimeoutMs: 300 },
    async (req) => {
      seen.push(await req.text());
      return new Response("served", { headers: { connection: "close" } });
    },
  );
  try {
    for (let round = 0; round < 3; round++) {
      const conn = await _accepted(front.addr.port);
      await conn.write(new TextEncoder().encode(REQUEST));
      _stall(1200); // longer than the head timeout, after the whole request was sent
      const answer = await _answer(conn);
      assert.match(answer, /^HTTP\/1\.1 200/, `round ${round}: ${answer.slice(0, 200)}`);
      assert.match(answer, /served$/);
    }
    assert.deepEqual(seen, ["{}", "{}", "{}"]);
    // The control: a client that sends no head is refused at its deadline, stall or not.
    const silent = await _accepted(front.addr.port);
    _stall(1200);
    const refused = await _answer(silent);
    assert.match(refused, /^HTTP\/1\.1 408 Request Timeout/);
    assert.match(refused, /no complete request head within 0\.3 s \(--head-timeout\)/);
    assert.equal(seen.length, 3);
  } finally {
    await front.close();
  }
});

Deno.test("a body that arrived whole while the process stalled past the body timeout is served; a body that never comes still gets 408", async () => {
  const front = await listenFront({
    hostname: "127.0.0.1",
    port: 0,
    bodyTimeoutMs: 300,
    bodyGraceMs: 300,
    minBodyRate: 1,
  }, async (req) =>
    new Response(`got ${await req.text().catch(() => "(cut)")}`, {
      headers: { connection: "close" },
    }));
  const [head, body] = REQUEST.split("\r\n\r\n");
  try {
    const conn = await _accepted(front.addr.port);
    await conn.write(new TextEncoder().encode(`${head}\r\n\r\n`));
    await new Promise((r) => setTimeout(r, 100)); // the head is relayed; the body's clock runs
    await conn.write(new TextEncoder().encode(body));
    _stall(1200);
    assert.match(await _answer(conn), /^HTTP\/1\.1 200[\s\S]*got \{\}$/);
    // The control: the body never comes.
    const stuck = await _accepted(front.addr.port);
    await stuck.write(new TextEncoder().encode(`${head}\r\n\r\n`));
    assert.match(
      await _answer(stuck),
      /^HTTP\/1\.1 408[\s\S]*no complete request body within 0\.3 s/,
    );
  } finally {
    await front.close();
  }
});

Deno.test("a kept-alive connection's next head is timed from its first byte: a partial one gets 408, a whole one sent after a pause is served", async () => {
  const front = await listenFront(
    { hostname: "127.0.0.1", port: 0, headTimeoutMs: 400 },
    async (req) => new Response(`got ${await req.text()}`),
  );
  const ask = "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const buf = new Uint8Array(4096);
  /** The next response on `conn` (it ends with the handler's "got {}"). */
  const response = async (conn: Deno.Conn) => {
    let text = "";
    while (!text.endsWith("got {}")) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += dec.decode(buf.subarray(0, n));
    }
    return text;
  };
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: front.addr.port });
    await conn.write(enc.encode(ask));
    assert.match(await response(conn), /^HTTP\/1\.1 200[\s\S]*keep-alive/i);
    // Idle longer than the head timeout, then a whole request: the clock starts at its first byte.
    await new Promise((r) => setTimeout(r, 800));
    await conn.write(enc.encode(ask));
    assert.match(await response(conn), /^HTTP\/1\.1 200/);
    // A partial next head is refused at its deadline, not held.
    await conn.write(enc.encode("POST /mcp HTTP/1.1\r\nHost"));
    const refused = await _answer(conn);
    assert.match(refused, /^HTTP\/1\.1 408 Request Timeout/);
    assert.match(refused, /no complete request head within 0\.4 s \(--head-timeout\)/);
  } finally {
    await front.close();
  }
});
