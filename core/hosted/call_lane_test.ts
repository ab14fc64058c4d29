// The call lane against a real scripted server process
// (tests/fixtures/hosted/lane_server.ts) over the real checked channel: each
// test is an attack of the server on corral's own tools/call layer.
import assert from "node:assert/strict";
import {
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
} from "@modelcontextprotocol/client";
import { CallCancelled, CallLane, CallTimedOut } from "./call_lane.ts";
import { type ChannelEventKind, StdioChannel } from "./_stdio_channel.ts";

const FIXTURE = new URL("../../tests/fixtures/hosted/lane_server.ts", import.meta.url).pathname;

interface _Rig extends AsyncDisposable {
  lane: CallLane;
  channel: StdioChannel;
  events: Array<{ kind: ChannelEventKind; detail: string }>;
  stderr: string[];
  /** What passed on to the SDK's side of the channel. */
  sdk: unknown[];
}

function _rig(): _Rig {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", FIXTURE],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const events: _Rig["events"] = [];
  const stderr: string[] = [];
  const lane = new CallLane("lanetest", (line) => channel.write(line));
  const channel: StdioChannel = new StdioChannel(child, {
    lane,
    onEvent: (kind, detail) => events.push({ kind, detail }),
    onStderr: (line) => stderr.push(line),
  });
  const sdk: unknown[] = [];
  channel.onmessage = (m) => sdk.push(m);
  void channel.start();
  return {
    lane,
    channel,
    events,
    stderr,
    sdk,
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

Deno.test("call lane: a plain call is answered", async () => {
  await using rig = _rig();
  const r = await rig.lane.call("echo", { a: 1 }, _OPTS);
  assert.equal(_text(r), 'echo {"a":1}');
  assert.equal(rig.lane.open, 0);
});

Deno.test("call lane: responses to lane ids never sent are refused as forged; the genuine answer wins", async () => {
  await using rig = _rig();
  for (let i = 0; i < 5; i++) {
    const r = await rig.lane.call("forge", {}, _OPTS);
    assert.equal(_text(r), "genuine");
  }
  // The next calls still work after the forged lines (the second answer came after the first).
  assert.equal(_text(await rig.lane.call("echo", {}, _OPTS)), "echo {}");
  await _until("forged events", () => rig.events.some((e) => e.kind === "forged"));
  // Reported at most once a second: the first forged line of the run.
  const forged = rig.events.filter((e) => e.kind === "forged").map((e) => e.detail).join("\n");
  assert.match(forged, /"corral:999999", which corral never sent/);
  assert.deepEqual(rig.sdk, [], "a forged response reached the SDK client");
  assert.equal(rig.lane.open, 0);
});

Deno.test("call lane: a response after a timeout or an abort is dropped, and the server is told", async () => {
  await using rig = _rig();
  const timedOut = await rig.lane.call("slow", { ms: 600 }, { timeoutMs: 100 }).catch((e) => e);
  assert.ok(timedOut instanceof SdkError, String(timedOut));
  assert.equal(timedOut.code, SdkErrorCode.RequestTimeout);
  assert.ok(timedOut instanceof CallTimedOut, String(timedOut));
  // A server's own error with the timeout code is its answer, not the lane's timeout.
  const told = await rig.lane.call("timeout_error", {}, _OPTS).catch((e) => e);
  assert.ok(told instanceof ProtocolError && told.code === -32001, String(told));
  assert.ok(!(told instanceof CallTimedOut), "a server's error is not the lane's timeout");
  const ac = new AbortController();
  const aborted = rig.lane.call("slow", { ms: 600 }, { timeoutMs: 20_000, signal: ac.signal });
  setTimeout(() => ac.abort(new Error("the client went away")), 100);
  const err = await aborted.catch((e) => e);
  // A cancellation is not a timeout: its own error, which does not stop the server.
  assert.ok(err instanceof CallCancelled, String(err));
  assert.match(err.message, /the call to slow was cancelled/);
  await _until(
    "two cancellations",
    () => rig.stderr.filter((l) => /^cancelled /.test(l)).length === 2,
  );
  // Both late answers arrive: dropped quietly, neither reaches the SDK client.
  await new Promise((r) => setTimeout(r, 900));
  assert.deepEqual(rig.sdk, []);
  assert.deepEqual(rig.events, []);
  assert.equal(rig.lane.open, 0);
  assert.match(rig.stderr.join("\n"), /cancelled corral:1: .*Request timed out/);
  assert.equal(_text(await rig.lane.call("echo", {}, _OPTS)), "echo {}");
  // An aborted signal refuses before anything is sent.
  const gone = AbortSignal.abort(new Error("already gone"));
  await assert.rejects(
    rig.lane.call("echo", {}, { timeoutMs: 1000, signal: gone }),
    CallCancelled,
  );
});

Deno.test("call lane: each call times out at its own deadline, whatever the calls around it", async () => {
  await using rig = _rig();
  // A long deadline first, then a short one: the short call still times out (the lane's one
  // timer is armed again for the earlier deadline), and the long one is answered.
  const long = rig.lane.call("slow", { ms: 900 }, { timeoutMs: 20_000 });
  const short = rig.lane.call("slow", { ms: 600 }, { timeoutMs: 100 }).catch((e) => e);
  const err = await short;
  assert.ok(err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout, String(err));
  assert.deepEqual(err.data, { timeout: 100 });
  assert.equal(_text(await long), "late");
  // After timers fired and calls ended, again: answered calls are not timed out, late ones are.
  for (let i = 0; i < 3; i++) {
    assert.equal(_text(await rig.lane.call("echo", { i }, { timeoutMs: 150 })), `echo {"i":${i}}`);
    const late = await rig.lane.call("slow", { ms: 500 }, { timeoutMs: 50 }).catch((e) => e);
    assert.ok(late instanceof SdkError && late.code === SdkErrorCode.RequestTimeout, String(late));
  }
  assert.equal(rig.lane.open, 0);
});

Deno.test("call lane: progress with a foreign token is not delivered to the call", async () => {
  await using rig = _rig();
  // Another call's token, once it is finished, is foreign too.
  await rig.lane.call("echo", {}, { ..._OPTS, onProgress: () => {} });
  for (let i = 0; i < 5; i++) {
    const seen: number[] = [];
    const r = await rig.lane.call("progress", { other: "corral:1" }, {
      ..._OPTS,
      onProgress: (p, total) => {
        assert.equal(total, 10);
        seen.push(p);
      },
    });
    assert.equal(_text(r), "progressed");
    // 2 (unknown lane token), 3 (a number: the SDK's, which knows none), 4 (a finished call's)
    // and "five" (malformed) never reach it.
    assert.deepEqual(seen, [1, 6]);
  }
});

Deno.test("call lane: a malformed result is an error naming the server and the tool", async () => {
  await using rig = _rig();
  const kinds = {
    number: /is not an object/,
    array: /is not an object/,
    content: /content is not an array/,
    block: /content\[0\] is not an object/,
    type: /content\[0\]\.type is not a string/,
    isError: /isError is not a boolean/,
    structured: /structuredContent is not an object/,
    meta: /_meta is not an object/,
  };
  for (const [kind, why] of Object.entries(kinds)) {
    const err = await rig.lane.call("malformed", { kind }, _OPTS).then(() => null, (e) => e);
    assert.ok(err instanceof Error, `${kind} was accepted`);
    assert.match(err.message, /server "lanetest" answered tools\/call "malformed"/);
    assert.match(err.message, why);
  }
  await assert.rejects(
    rig.lane.call("envelope", {}, _OPTS),
    /"envelope" with a malformed .*either/,
  );
  const err = await rig.lane.call("error", {}, _OPTS).catch((e) => e);
  assert.ok(
    err instanceof ProtocolError && err.code === -32602 && /bad arguments/.test(err.message),
  );
  assert.equal(_text(await rig.lane.call("echo", {}, _OPTS)), "echo {}");
});

Deno.test("call lane: structured content is checked against the tool's output schema", async () => {
  await using rig = _rig();
  rig.lane.setTools([
    {
      name: "structured",
      inputSchema: { type: "object" },
      outputSchema: {
        type: "object",
        properties: { count: { type: "number" } },
        required: ["count"],
      },
    },
    { name: "echo", inputSchema: { type: "object" }, outputSchema: { type: "object" } },
    {
      name: "tasky",
      inputSchema: { type: "object" },
      execution: { taskSupport: "required" },
    },
  ]);
  assert.deepEqual((await rig.lane.call("structured", { count: 3 }, _OPTS)).structuredContent, {
    count: 3,
  });
  const bad = await rig.lane.call("structured", { count: "three" }, _OPTS).catch((e) => e);
  assert.ok(
    bad instanceof ProtocolError && bad.code === ProtocolErrorCode.InvalidParams,
    String(bad),
  );
  assert.match(bad.message, /does not match the tool's output schema/);
  await assert.rejects(rig.lane.call("echo", {}, _OPTS), /did not return structured content/);
  await assert.rejects(rig.lane.call("tasky", {}, _OPTS), /requires task-based execution/);
});

Deno.test("call lane: a server that dies fails its open calls; later calls are refused", async () => {
  await using rig = _rig();
  const slow = rig.lane.call("slow", { ms: 60_000 }, _OPTS);
  const crash = rig.lane.call("crash", {}, _OPTS);
  for (const p of [slow, crash]) {
    const err = await p.catch((e) => e);
    assert.ok(err instanceof SdkError && err.code === SdkErrorCode.ConnectionClosed, String(err));
  }
  assert.equal(rig.lane.open, 0);
  await assert.rejects(rig.lane.call("echo", {}, _OPTS), /Connection closed/);
});
