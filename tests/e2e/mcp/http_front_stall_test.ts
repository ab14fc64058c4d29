// The HTTP front's body clock blames a client only for its own slowness:
// when this process stalls (its event loop starved, as when 200 sandboxes
// start at once on two cores) after a client sent its whole body, the
// clock's tick and the bytes that arrived are ready in the same turn; the
// request is served, never answered 408 (core/mcp/_body_clock.ts on
// core/wire/peer_clock.ts). A body that never comes still gets 408 (the
// control). The head's deadline is node:http's own (headersTimeout): not
// stall-aware yet.
import assert from "node:assert/strict";
import { listenFront } from "../../../core/mcp/_http_front.ts";

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
