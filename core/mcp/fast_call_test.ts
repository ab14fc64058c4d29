/**
 * The `tools/call` fast lane against the SDK's route: the same raw JSON-RPC
 * lines go to a server on the SDK's stdio transport alone and to one with
 * the lane in front (./stdio_lane.ts), over the fixture tools of
 * tests/fixtures/progress_tools.ts in a real registry; every line written
 * back must be the same.
 */
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { parsePolicy } from "../config/policy.ts";
import { Registry, type RegistryCallOptions } from "../registry/registry.ts";
import type { FastCalls } from "./fast_call.ts";
import { createMcpServer, type McpRegistry, type McpServerOptions } from "./mcp_server.ts";
import { limitLines } from "./_stdio_limit.ts";
import { connectStdio } from "./stdio_lane.ts";

const FIXTURE = new URL("../../tests/fixtures/progress_tools.ts", import.meta.url).pathname;

type Msg = Record<string, unknown>;

interface Stack {
  out: Msg[];
  lane?: FastCalls;
  /** The registry calls' options, in order (signals included). */
  calls: RegistryCallOptions[];
  send(message: Msg | string): void;
  /** Resolves when an answer with `id` was written. */
  answer(id: unknown): Promise<Msg>;
  /** A ping answered: every message sent before it has been handled. */
  barrier(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

async function _registry(): Promise<{ registry: Registry; dir: string }> {
  const dir = await Deno.makeTempDir({ prefix: "corral_fast_call_" });
  const policy = parsePolicy("{}", "test-permissions.json", dir);
  const registry = await Registry.create({
    workspace: dir,
    policy,
    noBuiltins: true,
    cacheDir: null,
    sources: [{ id: "fixture", kind: "builtin", modules: [FIXTURE], policy: policy.toolset("f") }],
  });
  return { registry, dir };
}

/** A server on stdio-like streams: the SDK's transport alone, or with the lane in front. */
async function _stack(withLane: boolean, options: McpServerOptions = {}): Promise<Stack> {
  const { registry, dir } = await _registry();
  const calls: RegistryCallOptions[] = [];
  const spy: McpRegistry = {
    loaded: () => registry.loaded(),
    list: () => registry.list(),
    unknownToolMessage: (name) => registry.unknownToolMessage(name),
    call: (name, args, opts) => {
      calls.push(opts ?? {});
      return registry.call(name, args, opts);
    },
  };
  const input = new PassThrough();
  const output = new PassThrough();
  const lines = limitLines(input as unknown as NodeJS.ReadableStream, 1 << 20, () => {});
  const mcp = createMcpServer(spy, options);
  let lane: FastCalls | undefined;
  if (withLane) lane = await connectStdio(mcp, lines, output);
  else await mcp.connect(new StdioServerTransport(lines as never, output as never));
  const out: Msg[] = [];
  let text = "";
  const send = (m: Msg | string) =>
    input.write((typeof m === "string" ? m : JSON.stringify(m)) + "\n");
  output.on("data", (chunk: Buffer) => {
    text += chunk.toString();
    for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n")) {
      const message = JSON.parse(text.slice(0, nl)) as Msg;
      text = text.slice(nl + 1);
      out.push(message);
      // The client's side of confirmation: accept every elicitation.
      if (message.method === "elicitation/create") {
        send({
          jsonrpc: "2.0",
          id: message.id,
          result: { action: "accept", content: { approve: true } },
        });
      }
    }
  });
  const answer = async (id: unknown) => {
    const started = Date.now();
    for (;;) {
      const got = out.find((m) => m.id === id && !("method" in m));
      if (got) return got;
      if (Date.now() - started > 20_000) throw new Error(`no answer for ${JSON.stringify(id)}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  let pings = 0;
  return {
    out,
    lane,
    calls,
    send,
    answer,
    async barrier() {
      const id = `ping-${++pings}`;
      send({ jsonrpc: "2.0", id, method: "ping" });
      await answer(id);
    },
    async [Symbol.asyncDispose]() {
      await mcp.close();
      await registry.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const _INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: { elicitation: {} },
    clientInfo: { name: "fast-call-test", version: "1" },
  },
};

const _call = (id: unknown, name: string, args?: unknown, more: Msg = {}) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, ...(args === undefined ? {} : { arguments: args }), ...more },
});

/** Well-formed calls (the lane's), each answered. */
const _LANE_CALLS: Msg[] = [
  _call(10, "Steps", { steps: 3 }, { _meta: { progressToken: "p1" } }),
  _call("s", "Sleep", { ms: 0 }),
  _call(11, "Sleep", { ms: "long", extra: 1 }), // bad arguments: a tool error result
  _call(12, "Nope", {}), // unknown tool: an MCP error
  _call(13, "Guarded"), // no arguments; confirmed through elicitation (a request of the lane's)
  _call(14, "Steps", { steps: 1 }, { _meta: { progressToken: 7, other: "x" } }),
];

/** Malformed or not the lane's: the SDK answers (or ignores) them as it always did. */
const _SDK_LINES: Array<Msg | string> = [
  _call(20, 5 as unknown as string, {}), // a name that is not a string
  _call(21, "Sleep", [1]), // arguments that are not an object
  _call(22, "Sleep", null),
  _call(23, "Sleep", { ms: 0 }, { task: { ttl: 1000 } }), // a task: the SDK's
  _call(24, "Sleep", { ms: 0 }, { _meta: { progressToken: true } }),
  _call(25, "Sleep", { ms: 0 }, { extra: 1 }),
  _call(1.5, "Sleep", { ms: 0 }),
  { ..._call(26, "Sleep", { ms: 0 }), extra: true },
  { ..._call(27, "Sleep", { ms: 0 }), jsonrpc: "1.0" },
  '{"jsonrpc":"2.0","id":28,"method":"tools/call","params":{"name":"Sleep","arguments":{"__proto__":{"ms":0}}}}',
  '{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"Sleep"', // not JSON
];

/**
 * The same script on a stack: a call before initialize, initialize, the
 * calls, the odd lines. The ids of odd lines that got an answer are
 * returned; with `answered` (the SDK's), those are waited for instead.
 */
async function _script(s: Stack, answered?: Set<unknown>): Promise<Set<unknown>> {
  s.send(_call("early", "Sleep", { ms: 0 }));
  await s.answer("early");
  // Before initialize the client cannot be asked: confirmation refuses, on both routes.
  s.send(_call("early-guarded", "Guarded"));
  await s.answer("early-guarded");
  s.send(_INIT);
  await s.answer(1);
  s.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  s.send({ jsonrpc: "2.0", id: 2, method: "logging/setLevel", params: { level: "debug" } });
  await s.answer(2);
  for (const call of _LANE_CALLS) {
    s.send(call);
    await s.answer(call.id);
  }
  const got = new Set<unknown>();
  for (const [i, line] of _SDK_LINES.entries()) {
    s.send(line);
    await s.barrier();
    if (answered) {
      if (answered.has(i)) await s.answer(_idOf(line));
      continue;
    }
    // The SDK's own answer may come after the ping's (a tool call): give it time.
    await new Promise((r) => setTimeout(r, 300));
    if (s.out.some((m) => m.id === _idOf(line) && !("method" in m))) got.add(i);
  }
  return got;
}

function _idOf(line: Msg | string): unknown {
  return typeof line === "string" ? Number(/"id":(\d+)/.exec(line)?.[1]) : line.id;
}

/** The messages written, without the barrier's pings (whose answers may overtake a call's). */
function _noPings(out: Msg[]): Msg[] {
  return out.filter((m) => !String(m.id).startsWith("ping-"));
}

Deno.test("the lane answers every call as the SDK's route does, and leaves odd ones to the SDK", async () => {
  await using sdk = await _stack(false);
  await using fast = await _stack(true);
  const answered = await _script(sdk);
  await _script(fast, answered);
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(_noPings(fast.out), _noPings(sdk.out));
  assert.equal(fast.out.length, sdk.out.length);
  // The lane took the well-formed calls, the early one included, and nothing else.
  assert.equal(fast.lane!.taken, _LANE_CALLS.length + 2);
  const byId = (id: unknown) => sdk.out.find((m) => m.id === id && !("method" in m))!;
  const result = (id: unknown) => byId(id).result as Msg;
  assert.deepEqual(result(10).structuredContent, { success: true, steps: 3 });
  assert.equal(result(11).isError, true);
  assert.match(JSON.stringify(result(11)), /ms: Expected number/);
  assert.match(JSON.stringify(byId(12).error), /-32602.*Nope/);
  assert.deepEqual(result(13).structuredContent, { success: true, ran: true });
  assert.ok(sdk.out.some((m) => m.method === "elicitation/create"), "confirmation was asked");
  assert.equal(result("early-guarded").isError, true);
  assert.match(JSON.stringify(result("early-guarded")), /needs confirmation/);
  const progress = sdk.out.filter((m) => m.method === "notifications/progress");
  assert.deepEqual(progress.map((m) => (m.params as Msg).progressToken), ["p1", "p1", "p1", 7]);
  assert.match(JSON.stringify(byId(20).error), /Invalid|invalid|expected/);
  assert.ok(!sdk.out.some((m) => m.id === 26 || m.id === 1.5), "the SDK ignores these");
});

Deno.test("the lane's answers are byte for byte the SDK's (same serialisation, one line each)", async () => {
  const raw = async (withLane: boolean) => {
    await using s = await _stack(withLane);
    s.send(_INIT);
    await s.answer(1);
    s.send(_call(3, "Sleep", { ms: 0 }));
    await s.answer(3);
    s.send(_call(4, "Nope"));
    await s.answer(4);
    return s.out.map((m) => JSON.stringify(m));
  };
  const fast = await raw(true);
  assert.deepEqual(fast, await raw(false));
  assert.equal(fast.length, 3);
});

Deno.test("a cancellation reaches the lane's call, which is then never answered", async () => {
  await using s = await _stack(true);
  s.send(_INIT);
  await s.answer(1);
  s.send(_call("long", "Sleep", { ms: 60_000 }));
  while (s.calls.length === 0) await new Promise((r) => setTimeout(r, 5));
  const signal = s.calls[0].signal!;
  assert.equal(signal.aborted, false);
  const cancel = {
    jsonrpc: "2.0",
    method: "notifications/cancelled",
    params: { requestId: "long", reason: "changed my mind" },
  };
  assert.equal(s.lane!.offer({ ...cancel, params: { requestId: "other" } }), false);
  s.send(cancel);
  await s.barrier();
  assert.equal(signal.aborted, true);
  assert.equal(signal.reason, "changed my mind");
  // The registry's call ends (the sleep honours the signal); still no answer for it.
  await new Promise((r) => setTimeout(r, 50));
  await s.barrier();
  assert.ok(!s.out.some((m) => m.id === "long"), JSON.stringify(s.out));
  // The session goes on: the next call is answered.
  s.send(_call("next", "Sleep", { ms: 0 }));
  assert.deepEqual(((await s.answer("next")).result as Msg).structuredContent, {
    success: true,
    slept: 0,
  });
});

Deno.test("closing the connection aborts the lane's running calls and it takes no more", async () => {
  const s = await _stack(true);
  s.send(_call("long", "Sleep", { ms: 60_000 }));
  while (s.calls.length === 0) await new Promise((r) => setTimeout(r, 5));
  await s[Symbol.asyncDispose]();
  assert.equal(s.calls[0].signal!.aborted, true);
  assert.equal(s.lane!.offer(_call("late", "Sleep", { ms: 0 })), false);
});

Deno.test("a call in the same chunk as initialize sees the client's capabilities, as on the SDK route", async () => {
  for (const withLane of [false, true]) {
    await using s = await _stack(withLane);
    // One write: initialize (elicitation declared), then a call that needs confirmation.
    s.send(`${JSON.stringify(_INIT)}\n${JSON.stringify(_call("g", "Guarded"))}`);
    const answer = await s.answer("g");
    assert.deepEqual((answer.result as Msg).structuredContent, { success: true, ran: true });
    assert.ok(s.out.some((m) => m.method === "elicitation/create"), `asked (lane: ${withLane})`);
    assert.equal(s.lane?.taken ?? 0, withLane ? 1 : 0);
  }
});

Deno.test("the lane's calls wait at the instance's gate: beyond its queue a tool error says so", async () => {
  await using s = await _stack(true, { maxConcurrent: 1, maxQueue: 0 });
  s.send(_INIT);
  await s.answer(1);
  s.send(_call("long", "Sleep", { ms: 500 }));
  while (s.calls.length === 0) await new Promise((r) => setTimeout(r, 5));
  s.send(_call("busy", "Sleep", { ms: 0 }));
  const busy = (await s.answer("busy")).result as Msg;
  assert.equal(busy.isError, true);
  assert.match(JSON.stringify(busy), /too busy: 1 calls running and 0 waiting/);
  assert.equal(s.calls.length, 1, "the refused call never reached the registry");
  assert.equal(((await s.answer("long")).result as Msg).isError, false);
  assert.equal(s.lane!.taken, 2);
});
