// The egress proxy against request smuggling: what llhttp refuses is refused before anything is
// connected, and an absolute-form http:// request reaches its server as exactly one request
// (bytes pipelined behind it, or after a broken chunked body, never arrive).
import assert from "node:assert/strict";
import { join } from "node:path";
import { EgressProxy, type EgressRecord } from "./egress.ts";

/** A server that takes connections one after another and keeps what each sent until its end. */
function _upstream() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const received: string[] = [];
  const serving = (async () => {
    for await (const conn of listener) {
      const chunks: Uint8Array[] = [];
      const buf = new Uint8Array(4096);
      try {
        for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
          chunks.push(buf.slice(0, n));
        }
        const ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
        await conn.write(new TextEncoder().encode(ok));
      } catch { /* the proxy cut it */ }
      received.push(chunks.map((c) => String.fromCharCode(...c)).join(""));
      conn.close();
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    received,
    [Symbol.asyncDispose]: async () => {
      listener.close();
      await serving;
    },
  };
}

async function _proxy() {
  const dir = await Deno.makeTempDir();
  const records: EgressRecord[] = [];
  const proxy = new EgressProxy({
    allowed: ["127.0.0.1"],
    ownAddresses: new Set(),
    onConnection: (r) => records.push(r),
  });
  const path = join(dir, "egress.sock");
  proxy.listen(path);
  return {
    records,
    /** Send `text` on a new connection; what comes back until the proxy closes it. */
    async ask(text: string): Promise<string> {
      const conn = await Deno.connect({ transport: "unix", path });
      await conn.write(Uint8Array.from(text, (c) => c.charCodeAt(0)));
      let answer = "";
      const buf = new Uint8Array(4096);
      try {
        for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
          answer += new TextDecoder().decode(buf.subarray(0, n));
        }
      } catch { /* reset */ }
      conn.close();
      return answer;
    },
    [Symbol.asyncDispose]: async () => {
      proxy.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("egress proxy: an absolute-form request goes on as exactly one request; what is pipelined behind it never arrives", async () => {
  await using up = _upstream();
  await using proxy = await _proxy();
  const at = `127.0.0.1:${up.port}`;
  const answer = await proxy.ask(
    `POST http://${at}/one HTTP/1.1\r\nHost: ${at}\r\nContent-Length: 5\r\n\r\nhello` +
      `GET http://${at}/CANARY HTTP/1.1\r\nHost: ${at}\r\n\r\n`,
  );
  assert.match(answer, /^HTTP\/1\.1 200 OK[\s\S]*ok$/);
  assert.equal(up.received.length, 1);
  assert.match(up.received[0], /^POST \/one HTTP\/1\.1\r\n/);
  assert.match(up.received[0], /Connection: close\r\n\r\nhello$/);
  assert.doesNotMatch(up.received.join(), /CANARY/);
  // Chunked: the body ends with its last chunk; the request after it stays behind too.
  const chunked = await proxy.ask(
    `POST http://${at}/two HTTP/1.1\r\nHost: ${at}\r\nTransfer-Encoding: chunked\r\n\r\n` +
      `3;x=y\r\nabc\r\n0\r\nTrailer-A: 1\r\n\r\nGET /CANARY HTTP/1.1\r\n\r\n`,
  );
  assert.match(chunked, /ok$/);
  assert.match(up.received[1], /\r\n\r\n3;x=y\r\nabc\r\n0\r\nTrailer-A: 1\r\n\r\n$/);
  assert.doesNotMatch(up.received.join(), /CANARY/);
});

Deno.test("egress proxy: heads llhttp refuses (Content-Length with Transfer-Encoding, two lengths, bare LF, folded fields, unknown methods) get 400 and connect nothing", async () => {
  await using up = _upstream();
  await using proxy = await _proxy();
  const at = `127.0.0.1:${up.port}`;
  const smuggles = [
    `POST http://${at}/ HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    `POST http://${at}/ HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nCANARY`,
    `POST http://${at}/ HTTP/1.1\r\nTransfer-Encoding: chunked, identity\r\n\r\nCANARY`,
    `GET http://${at}/ HTTP/1.1\nHost: ${at}\n\nCANARY`,
    `GET http://${at}/ HTTP/1.1\r\nX-A: 1\r\n Transfer-Encoding: chunked\r\n\r\nCANARY`,
    `SMUGGLE http://${at}/ HTTP/1.1\r\n\r\nCANARY`,
    `CONNECT ${at} HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nCANARY`,
  ];
  for (const s of smuggles) {
    const answer = await proxy.ask(s);
    assert.match(answer, /^HTTP\/1\.1 400 Bad Request/, JSON.stringify(s));
    assert.match(answer, /Bad request: /);
  }
  // The control: a plain request through the same proxy is the upstream's first connection.
  assert.match(await proxy.ask(`GET http://${at}/control HTTP/1.1\r\nHost: ${at}\r\n\r\n`), /ok$/);
  assert.equal(up.received.length, 1);
  assert.match(up.received[0], /^GET \/control HTTP\/1\.1/);
});

Deno.test("egress proxy: a chunked body whose framing breaks is cut there and audited; nothing after the break arrives", async () => {
  await using up = _upstream();
  await using proxy = await _proxy();
  const at = `127.0.0.1:${up.port}`;
  await proxy.ask(
    `POST http://${at}/b HTTP/1.1\r\nHost: ${at}\r\nTransfer-Encoding: chunked\r\n\r\n` +
      `3\r\nabcCANARY\r\n0\r\n\r\n`,
  );
  const cut = proxy.records.find((r) => r.verdict === "refused");
  assert.match(cut?.reason ?? "", /broken request body \(chunk data longer than its size\)/);
  // The head went on (the server was reached), the broken chunk and what followed did not.
  await proxy.ask(`GET http://${at}/after HTTP/1.1\r\nHost: ${at}\r\n\r\n`);
  assert.match(up.received[0], /^POST \/b HTTP\/1\.1\r\n/);
  assert.doesNotMatch(up.received.join(), /CANARY/);
});
