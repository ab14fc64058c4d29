import assert from "node:assert/strict";
import { revocableStream } from "./_revocable_stream.ts";

const SSE = { "content-type": "text/event-stream" };
const enc = (s: string) => new TextEncoder().encode(s);

Deno.test("revocableStream: an open event stream ends at the first failed check; its source is cancelled", async () => {
  let cancelled: unknown;
  let source!: ReadableStreamDefaultController<Uint8Array>;
  const open = new ReadableStream<Uint8Array>({
    start(c) {
      source = c;
      c.enqueue(enc("event: message\ndata: 1\n\n"));
    },
    cancel(reason) {
      cancelled = reason;
    },
  });
  let valid = true;
  let checks = 0;
  const res = revocableStream(new Response(open, { status: 200, headers: SSE }), () => {
    checks++;
    return Promise.resolve(valid);
  }, 20);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/event-stream");
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  assert.equal((await reader.read()).value, "event: message\ndata: 1\n\n");
  // Valid checks pass messages on.
  while (checks < 3) await new Promise((r) => setTimeout(r, 10));
  source.enqueue(enc("data: 2\n\n"));
  assert.equal((await reader.read()).value, "data: 2\n\n");
  valid = false;
  assert.equal((await reader.read()).done, true);
  assert.match(String(cancelled), /no longer valid/);
});

Deno.test("revocableStream: a check that throws closes the stream (fail closed); other responses pass untouched", async () => {
  const open = new ReadableStream<Uint8Array>({ start() {} });
  const res = revocableStream(
    new Response(open, { headers: SSE }),
    () => Promise.reject(new Error("token store unreadable")),
    10,
  );
  assert.equal(await res.text(), "");
  const json = Response.json({ ok: true });
  assert.equal(revocableStream(json, () => Promise.resolve(false), 10), json);
  // A stream that ends by itself ends the watch too (no timer left behind).
  const short = new Response(
    new ReadableStream({
      start(c) {
        c.enqueue(enc(": done\n\n"));
        c.close();
      },
    }),
    { headers: SSE },
  );
  assert.equal(await revocableStream(short, () => Promise.resolve(true), 10).text(), ": done\n\n");
});
