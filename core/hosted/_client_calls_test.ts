// Hosted tools/call through the SDK's own Client (client_calls.ts) against a real scripted
// server process (tests/fixtures/hosted/lane_server.ts) over the real checked channel, with
// its cancel watch: each test is an attack of the server on that path.
import assert from "node:assert/strict";
import {
  Client,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
} from "@modelcontextprotocol/client";
import { CallCancelled, CallTimedOut } from "./call_lane.ts";
import { CancelWatch } from "./_cancel_watch.ts";
import { ClientCalls } from "./_client_calls.ts";
import { type ChannelEventKind, StdioChannel } from "./_stdio_channel.ts";

const FIXTURE = new URL("../../tests/fixtures/hosted/lane_server.ts", import.meta.url).pathname;

interface _Rig extends AsyncDisposable {
  calls: ClientCalls;
  client: Client;
  events: Array<{ kind: ChannelEventKind; detail: string }>;
  stderr: string[];
  /** What the SDK client reported (a late or unknown message it dropped). */
  sdkErrors: string[];
  ignored: string[];
}

async function _rig(): Promise<_Rig> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", FIXTURE],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const events: _Rig["events"] = [];
  const stderr: string[] = [];
  const ignored: string[] = [];
  const watch = new CancelWatch((why) => ignored.push(why));
  const channel = new StdioChannel(child, {
    watch,
    onEvent: (kind, detail) => events.push({ kind, detail }),
    onStderr: (line) => stderr.push(line),
  });
  const client = new Client({ name: "corral-test", version: "1.0.0" });
  const sdkErrors: string[] = [];
  client.onerror = (e) => sdkErrors.push(e.message);
  await client.connect(channel, { timeout: 20_000 });
  const calls = new ClientCalls("lanetest", client, watch, (why) => ignored.push(why));
  calls.setTools((await client.listTools()).tools as Array<Record<string, unknown>>);
  return {
    calls,
    client,
    events,
    stderr,
    sdkErrors,
    ignored,
    async [Symbol.asyncDispose]() {
      await channel.close();
      try {
        child.kill("SIGKILL");
      } catch { /* already gone */ }
      await child.status;
    },
  };
}

const _OPTS = { timeoutMs: 20_000 };

function _text(r: Record<string, unknown>): string {
  return (r.content as Array<{ text: string }>).map((b) => b.text).join("");
}

async function _until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(ok(), `never: ${what}`);
}

Deno.test("client calls: a plain call is answered", async () => {
  await using rig = await _rig();
  const r = await rig.calls.call("echo", { a: 1 }, _OPTS);
  assert.equal(_text(r), 'echo {"a":1}');
});

Deno.test("client calls: responses to ids never sent are refused as forged; the genuine answer wins", async () => {
  await using rig = await _rig();
  for (let i = 0; i < 5; i++) {
    const r = await rig.calls.call("forge", {}, _OPTS);
    assert.equal(_text(r), "genuine");
  }
  assert.equal(_text(await rig.calls.call("echo", {}, _OPTS)), "echo {}");
  await _until("forged events", () => rig.events.some((e) => e.kind === "forged"));
  const forged = rig.events.filter((e) => e.kind === "forged").map((e) => e.detail).join("\n");
  assert.match(forged, /"corral:999999", which corral never sent/);
  // None of them reached the SDK client (it would report an unknown message id).
  assert.deepEqual(rig.sdkErrors, []);
});

Deno.test("client calls: a response after a timeout or an abort is dropped quietly, and the server is told", async () => {
  await using rig = await _rig();
  const timedOut = await rig.calls.call("slow", { ms: 600 }, { timeoutMs: 100 }).catch((e) => e);
  assert.ok(timedOut instanceof CallTimedOut, String(timedOut));
  assert.ok(timedOut instanceof SdkError && timedOut.code === SdkErrorCode.RequestTimeout);
  assert.deepEqual(timedOut.data, { timeout: 100 });
  // A server's own error with the old timeout code is its answer, not corral's timeout.
  const told = await rig.calls.call("timeout_error", {}, _OPTS).catch((e) => e);
  assert.ok(told instanceof ProtocolError && told.code === -32001, String(told));
  assert.ok(!(told instanceof CallTimedOut), "a server's error is not the call's timeout");
  const ac = new AbortController();
  const aborted = rig.calls.call("slow", { ms: 600 }, { timeoutMs: 20_000, signal: ac.signal });
  setTimeout(() => ac.abort(new Error("the client went away")), 100);
  const err = await aborted.catch((e) => e);
  assert.ok(err instanceof CallCancelled, String(err));
  assert.match(err.message, /the call to slow was cancelled/);
  await _until(
    "two cancellations",
    () => rig.stderr.filter((l) => /^cancelled \d+: /.test(l)).length === 2,
  );
  assert.match(rig.stderr.join("\n"), /cancelled \d+: .*Request timed out/);
  // Both late answers arrive: dropped quietly, neither reaches the SDK client nor is forged.
  await new Promise((r) => setTimeout(r, 900));
  assert.deepEqual(rig.sdkErrors, []);
  assert.deepEqual(rig.events, []);
  // The cancelled call's ping was answered: the server does not count as ignoring it.
  assert.deepEqual(rig.ignored, []);
  assert.equal(_text(await rig.calls.call("echo", {}, _OPTS)), "echo {}");
  // An aborted signal refuses before anything is sent.
  const gone = AbortSignal.abort(new Error("already gone"));
  await assert.rejects(
    rig.calls.call("echo", {}, { timeoutMs: 1000, signal: gone }),
    CallCancelled,
  );
});

Deno.test("client calls: each call times out at its own deadline, whatever the calls around it", async () => {
  await using rig = await _rig();
  const long = rig.calls.call("slow", { ms: 900 }, { timeoutMs: 20_000 });
  const short = await rig.calls.call("slow", { ms: 600 }, { timeoutMs: 100 }).catch((e) => e);
  assert.ok(short instanceof CallTimedOut, String(short));
  assert.equal(_text(await long), "late");
  for (let i = 0; i < 3; i++) {
    assert.equal(_text(await rig.calls.call("echo", { i }, { timeoutMs: 150 })), `echo {"i":${i}}`);
    const late = await rig.calls.call("slow", { ms: 500 }, { timeoutMs: 50 }).catch((e) => e);
    assert.ok(late instanceof CallTimedOut, String(late));
  }
});

Deno.test("client calls: progress with a foreign token is not delivered to the call", async () => {
  await using rig = await _rig();
  // A finished call's token is foreign too (the SDK's token is the request's id: initialize
  // was 0, tools/list 1, this echo 2).
  await rig.calls.call("echo", {}, { ..._OPTS, onProgress: () => {} });
  const finished = 2;
  for (let i = 0; i < 5; i++) {
    const seen: number[] = [];
    const r = await rig.calls.call("progress", { other: finished }, {
      ..._OPTS,
      onProgress: (p, total) => {
        assert.equal(total, 10);
        seen.push(p);
      },
    });
    assert.equal(_text(r), "progressed");
    // 2 (a token nobody sent), 3 (a number no open call has), 4 (a finished call's) and
    // "five" (malformed) never reach it.
    assert.deepEqual(seen, [1, 6]);
  }
});

Deno.test("client calls: a malformed result is an error naming the server", async () => {
  await using rig = await _rig();
  const kinds = {
    number: /malformed JSON-RPC response: result is not an object/,
    array: /malformed JSON-RPC response: result is not an object/,
    content: /"malformed" with a malformed result: content: .*expected array/,
    block: /"malformed" with a malformed result: content\.0: /,
    type: /"malformed" with a malformed result: content\.0: /,
    isError: /"malformed" with a malformed result: isError: .*expected boolean/,
    structured: /"malformed" with a malformed result: structuredContent/,
    meta: /malformed JSON-RPC response: result\._meta is not an object/,
  };
  for (const [kind, why] of Object.entries(kinds)) {
    const err = await rig.calls.call("malformed", { kind }, _OPTS).then(() => null, (e) => e);
    assert.ok(err instanceof Error, `${kind} was accepted`);
    assert.match(err.message, why, kind);
    if (!/JSON-RPC/.test(String(why))) assert.match(err.message, /^server "lanetest" answered/);
  }
  // Both result and error: the request fails at once (no wait for its timeout).
  await assert.rejects(
    rig.calls.call("envelope", {}, { timeoutMs: 20_000 }),
    /malformed JSON-RPC response: it needs either result or error/,
  );
  const err = await rig.calls.call("error", {}, _OPTS).catch((e) => e);
  assert.ok(
    err instanceof ProtocolError && err.code === -32602 && /bad arguments/.test(err.message),
  );
  assert.equal(_text(await rig.calls.call("echo", {}, _OPTS)), "echo {}");
});

Deno.test("client calls: structured content is checked against the tool's listed output schema", async () => {
  await using rig = await _rig();
  assert.deepEqual(
    (await rig.calls.call("structured", { count: 3 }, _OPTS)).structuredContent,
    { count: 3 },
  );
  const bad = await rig.calls.call("structured", { count: "three" }, _OPTS).catch((e) => e);
  assert.ok(bad instanceof ProtocolError && bad.code === ProtocolErrorCode.InvalidParams, bad);
  assert.match(bad.message, /does not match the tool's output schema/);
  await assert.rejects(rig.calls.call("checked", {}, _OPTS), /did not return structured content/);
  // Refused before anything is sent: corral offers no tasks to hosted servers.
  await assert.rejects(rig.calls.call("tasky", {}, _OPTS), /requires task-based execution/);
});

Deno.test("client calls: a server that dies fails its open calls; later calls are refused", async () => {
  await using rig = await _rig();
  const slow = rig.calls.call("slow", { ms: 60_000 }, _OPTS);
  const crash = rig.calls.call("crash", {}, _OPTS);
  for (const p of [slow, crash]) {
    const err = await p.catch((e) => e);
    assert.ok(err instanceof SdkError && err.code === SdkErrorCode.ConnectionClosed, String(err));
  }
  await assert.rejects(rig.calls.call("echo", {}, _OPTS), /Not connected/);
});
