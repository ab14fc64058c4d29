/**
 * corral's MCP server on its stdio connection (./_stdio_connect.ts, the SDK's
 * v2 stdio transport behind corral's line limit), over the fixture tools of
 * tests/fixtures/progress_tools.ts in a real registry: raw JSON-RPC lines
 * in, every line written back checked: results, errors, progress,
 * confirmation, malformed lines, cancellation, the end of the connection
 * and the instance's gate.
 */
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { parsePolicy } from "../config/policy.ts";
import { Registry, type RegistryCallOptions } from "../registry/registry.ts";
import { createMcpServer, type McpRegistry, type McpServerOptions } from "./mcp_server.ts";
import { limitLines } from "./_stdio_limit.ts";
import { connectStdio } from "./_stdio_connect.ts";

const FIXTURE = new URL("../../tests/fixtures/progress_tools.ts", import.meta.url).pathname;

type Msg = Record<string, unknown>;

interface Stack {
  out: Msg[];
  /** Everything written, as written. */
  readonly raw: string;
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
  const dir = await Deno.makeTempDir({ prefix: "corral_stdio_connect_" });
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

/** A server on stdio-like streams, connected as `corral mcp` connects it. */
async function _stack(options: McpServerOptions = {}): Promise<Stack> {
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
  await connectStdio(mcp, lines, output);
  const out: Msg[] = [];
  let text = "";
  const send = (m: Msg | string) =>
    input.write((typeof m === "string" ? m : JSON.stringify(m)) + "\n");
  let raw = "";
  output.on("data", (chunk: Buffer) => {
    raw += chunk.toString();
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
    get raw() {
      return raw;
    },
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
    clientInfo: { name: "stdio-connect-test", version: "1" },
  },
};

const _call = (id: unknown, name: string, args?: unknown, more: Msg = {}) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, ...(args === undefined ? {} : { arguments: args }), ...more },
});

/** Well-formed calls, each answered. */
const _CALLS: Msg[] = [
  _call(10, "Steps", { steps: 3 }, { _meta: { progressToken: "p1" } }),
  _call("s", "Sleep", { ms: 0 }),
  _call(11, "Sleep", { ms: "long", extra: 1 }), // bad arguments: a tool error result
  _call(12, "Nope", {}), // unknown tool: an MCP error
  _call(13, "Guarded"), // no arguments; confirmed through elicitation
  _call(14, "Steps", { steps: 1 }, { _meta: { progressToken: 7, other: "x" } }),
];

/** Malformed or odd lines: the SDK answers (or ignores) them. */
const _ODD_LINES: Array<Msg | string> = [
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
 * The script: a call before initialize, initialize, the calls, the odd
 * lines; the indexes of the odd lines that got an answer.
 */
async function _script(s: Stack): Promise<Set<number>> {
  s.send(_call("early", "Sleep", { ms: 0 }));
  await s.answer("early");
  // Before initialize the client cannot be asked: confirmation refuses.
  s.send(_call("early-guarded", "Guarded"));
  await s.answer("early-guarded");
  s.send(_INIT);
  await s.answer(1);
  s.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  s.send({ jsonrpc: "2.0", id: 2, method: "logging/setLevel", params: { level: "debug" } });
  await s.answer(2);
  for (const call of _CALLS) {
    s.send(call);
    await s.answer(call.id);
  }
  const got = new Set<number>();
  for (const [i, line] of _ODD_LINES.entries()) {
    s.send(line);
    await s.barrier();
    // An answer to a tool call may come after the ping's: give it time.
    await new Promise((r) => setTimeout(r, 300));
    if (s.out.some((m) => m.id === _idOf(line) && !("method" in m))) got.add(i);
  }
  return got;
}

function _idOf(line: Msg | string): unknown {
  return typeof line === "string" ? Number(/"id":(\d+)/.exec(line)?.[1]) : line.id;
}

Deno.test("every call is answered in one line: results, tool errors, MCP errors, progress, confirmation; odd lines as the SDK does", async () => {
  await using s = await _stack();
  const answered = await _script(s);
  const byId = (id: unknown) => s.out.find((m) => m.id === id && !("method" in m))!;
  const result = (id: unknown) => byId(id).result as Msg;
  assert.deepEqual(result("early").structuredContent, { success: true, slept: 0 });
  assert.deepEqual(result(10).structuredContent, { success: true, steps: 3 });
  assert.equal(result(11).isError, true);
  assert.match(JSON.stringify(result(11)), /ms: Expected number/);
  assert.match(JSON.stringify(byId(12).error), /-32602.*Nope/);
  assert.deepEqual(result(13).structuredContent, { success: true, ran: true });
  assert.ok(s.out.some((m) => m.method === "elicitation/create"), "confirmation was asked");
  assert.equal(result("early-guarded").isError, true);
  assert.match(JSON.stringify(result("early-guarded")), /needs confirmation/);
  const progress = s.out.filter((m) => m.method === "notifications/progress");
  assert.deepEqual(progress.map((m) => (m.params as Msg).progressToken), ["p1", "p1", "p1", 7]);
  // Malformed requests get an error naming what is wrong; what is no request is not answered.
  assert.match(JSON.stringify(byId(20).error), /Invalid|invalid|expected/);
  for (const id of [21, 22]) assert.ok(byId(id)?.error, `${id}: ${JSON.stringify(byId(id))}`);
  assert.ok(!s.out.some((m) => m.id === 26 || m.id === 1.5), "the SDK ignores these");
  assert.ok(answered.size > 0 && answered.size < _ODD_LINES.length, [...answered].join(","));
});

Deno.test("each message is one line of JSON, written whole", async () => {
  await using s = await _stack();
  s.send(_INIT);
  await s.answer(1);
  s.send(_call(3, "Sleep", { ms: 0 }));
  await s.answer(3);
  s.send(_call(4, "Nope"));
  await s.answer(4);
  assert.deepEqual(s.out.map((m) => m.id), [1, 3, 4]);
  assert.equal(s.raw.split("\n").length, 4, s.raw);
  assert.equal(s.raw.at(-1), "\n");
});

Deno.test("a cancellation reaches the running call, which is then never answered", async () => {
  await using s = await _stack();
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
  // Another request's cancellation leaves it running.
  s.send({ ...cancel, params: { requestId: "other" } });
  await s.barrier();
  assert.equal(signal.aborted, false);
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

Deno.test("closing the connection aborts its running calls", async () => {
  const s = await _stack();
  s.send(_call("long", "Sleep", { ms: 60_000 }));
  while (s.calls.length === 0) await new Promise((r) => setTimeout(r, 5));
  await s[Symbol.asyncDispose]();
  assert.equal(s.calls[0].signal!.aborted, true);
});

Deno.test("a call in the same chunk as initialize sees the client's capabilities", async () => {
  await using s = await _stack();
  // One write: initialize (elicitation declared), then a call that needs confirmation.
  s.send(`${JSON.stringify(_INIT)}\n${JSON.stringify(_call("g", "Guarded"))}`);
  const answer = await s.answer("g");
  assert.deepEqual((answer.result as Msg).structuredContent, { success: true, ran: true });
  assert.ok(s.out.some((m) => m.method === "elicitation/create"), "asked");
});

Deno.test("calls wait at the instance's gate: beyond its queue a tool error says so", async () => {
  await using s = await _stack({ maxConcurrent: 1, maxQueue: 0 });
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
});
