// An npm server's own node:net connections to its forwarders, straight to
// the egress proxy (./forward_direct.ts): a real EgressProxy on a unix
// socket, a TCP echo server, and a client run the way a server is, with
// the module preloaded by `deno run --preload`.
import assert from "node:assert/strict";
import { join } from "node:path";
import { type EgressRecord, startEgress } from "./egress.ts";
import { DIRECT_FORWARDS_VAR } from "./egress_forward.ts";

const _DIRECT = new URL("./forward_direct.ts", import.meta.url).pathname;
const _CLIENT = new URL("../../tests/fixtures/egress/direct_client.ts", import.meta.url).pathname;

/** A TCP echo server: each chunk back as it comes. */
function _echoServer(): { port: number; hits: () => number; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let hits = 0;
  (async () => {
    for await (const conn of listener) {
      hits++;
      (async () => {
        const buf = new Uint8Array(4096);
        try {
          for (;;) {
            const n = await conn.read(buf);
            if (n === null) break;
            await conn.write(buf.subarray(0, n));
          }
        } catch { /* gone */ }
        conn.close();
      })();
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    hits: () => hits,
    close: () => listener.close(),
  };
}

async function _client(
  socket: string,
  forwards: unknown,
  host: string,
  port: number,
  settings?: string,
  mode = "plain",
): Promise<Record<string, unknown>> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--no-config",
      `--preload=${_DIRECT}`,
      _CLIENT,
      host,
      String(port),
      "hi",
      mode,
    ],
    env: { [DIRECT_FORWARDS_VAR]: settings ?? JSON.stringify({ socket, forwards }) },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.ok(text, new TextDecoder().decode(out.stderr));
  return JSON.parse(text);
}

Deno.test("forward_direct: a node:net connection to a forwarder goes to the proxy as CONNECT, is audited, and is the same socket to the server", async () => {
  const echo = _echoServer();
  const base = await Deno.makeTempDir();
  const records: EgressRecord[] = [];
  const target = `127.0.0.1:${echo.port}`;
  const egress = startEgress(join(base, "run"), {
    allowed: [target],
    onConnection: (r) => records.push(r),
  });
  try {
    const socket = join(egress.dir, "egress.sock");
    const forwards = [{ host: "127.0.0.1", port: echo.port, listen: "127.0.0.1" }];
    // By address, and by `localhost` (the forwarder listens on 127.0.0.1).
    for (const host of ["127.0.0.1", "localhost"]) {
      const r = await _client(socket, forwards, host, echo.port);
      assert.equal(r.error, undefined, JSON.stringify([r, records]));
      // What it wrote before the socket was up went after the proxy's answer, in order.
      assert.equal(r.data, "hi-before|hi-after");
      assert.equal(r.remote, `${host}:${echo.port}`);
      assert.equal(r.settingsVisible, false, "the settings stay out of the server's environment");
    }
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(echo.hits(), 2);
    assert.equal(records.length, 2, JSON.stringify(records));
    for (const rec of records) {
      assert.equal(rec.verdict, "allowed");
      assert.equal(rec.via, "direct");
      assert.equal(`${rec.host}:${rec.port}`, target);
      assert.equal(rec.bytesOut, "hi-before|hi-after".length);
    }
  } finally {
    egress.close();
    echo.close();
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("forward_direct: a forwarder the proxy refuses is ECONNREFUSED and never reached; other connections (no forwarder, a TLS socket) are left alone; bad settings change nothing", async () => {
  const canary = _echoServer();
  const other = _echoServer();
  const base = await Deno.makeTempDir();
  const records: EgressRecord[] = [];
  // The proxy's list is the authority: a forwarder it does not grant is refused there.
  const egress = startEgress(join(base, "run"), {
    allowed: ["127.0.0.1:1"],
    onConnection: (r) => records.push(r),
  });
  try {
    const socket = join(egress.dir, "egress.sock");
    const forwards = [{ host: "127.0.0.1", port: canary.port, listen: "127.0.0.1" }];
    const refused = await _client(socket, forwards, "127.0.0.1", canary.port);
    assert.equal(refused.error, "ECONNREFUSED", JSON.stringify(refused));
    assert.equal(refused.connected, undefined);
    assert.equal(canary.hits(), 0, "the refused target was reached");
    assert.equal(records.length, 1);
    assert.equal(records[0].verdict, "refused");
    assert.equal(records[0].via, "direct");

    // A connection to no forwarder is node's own (here: the host's network, outside a namespace).
    const own = await _client(socket, forwards, "127.0.0.1", other.port);
    assert.equal(own.data, "hi-before|hi-after", JSON.stringify(own));
    assert.equal(records.length, 1, "a connection to no forwarder went to the proxy");

    // A TLS socket's own connect is left alone, even to a forwarder (its bytes are not clear).
    const tlsForwards = [{ host: "127.0.0.1", port: other.port, listen: "127.0.0.1" }];
    await _client(socket, tlsForwards, "127.0.0.1", other.port, undefined, "tls");
    assert.equal(records.length, 1, "a TLS socket's connect went to the proxy");
    assert.equal(other.hits(), 2);

    // Unreadable settings: the module does nothing, and the client runs.
    const bad = await _client(socket, forwards, "127.0.0.1", other.port, "{not json");
    assert.equal(bad.data, "hi-before|hi-after", JSON.stringify(bad));
    assert.equal(records.length, 1);
    assert.equal(other.hits(), 3);
  } finally {
    egress.close();
    canary.close();
    other.close();
    await Deno.remove(base, { recursive: true });
  }
});
