/**
 * In-process tests of the MCP server: the SDK's own `Client` talks to
 * `createMcpServer` over `InMemoryTransport`, with a registry holding only
 * the fixture tools of tests/fixtures/progress_tools.ts.
 */
import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/inMemory"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  type Progress,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { ConfigError } from "../tool/errors.ts";
import { createMcpServer, type McpRegistry, type McpServerOptions } from "./mcp_server.ts";
import { isLoopback, parseListenAddress, serveHttp } from "./serve_http.ts";
import { parsePolicy } from "../config/policy.ts";
import { Registry } from "../registry/registry.ts";
import type { ToolResult } from "../tool/result.ts";

const FIXTURE = new URL("../../tests/fixtures/progress_tools.ts", import.meta.url).pathname;

async function fixtureRegistry(policyJson = "{}"): Promise<{ registry: Registry; dir: string }> {
  const dir = await Deno.makeTempDir({ prefix: "corral_mcp_" });
  const policy = parsePolicy(policyJson, "test-permissions.json", dir);
  const registry = await Registry.create({
    workspace: dir,
    policy,
    noBuiltins: true,
    cacheDir: null,
    sources: [{
      id: "fixture",
      kind: "builtin",
      modules: [FIXTURE],
      policy: policy.toolset("fixture"),
    }],
  });
  return { registry, dir };
}

interface Harness {
  client: Client;
  logs: Array<{ level: string; data: unknown }>;
  calls: Promise<ToolResult>[];
  notifyToolsChanged(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A client connected in process to a server over the fixture registry. */
async function connect(
  options: McpServerOptions & {
    policy?: string;
    elicit?: "accept" | "decline";
    /** Leave the server's default log level (warning); otherwise ask for debug. */
    defaultLevel?: boolean;
  } = {},
): Promise<Harness> {
  const { registry, dir } = await fixtureRegistry(options.policy);
  const calls: Promise<ToolResult>[] = [];
  const spy: McpRegistry = {
    loaded: () => registry.loaded(),
    list: () => registry.list(),
    unknownToolMessage: (name) => registry.unknownToolMessage(name),
    call: (name, args, opts) => {
      const p = registry.call(name, args, opts);
      calls.push(p);
      return p;
    },
  };
  const mcp = createMcpServer(spy, options);
  const client = new Client(
    { name: "corral-test", version: "1.0.0" },
    { capabilities: options.elicit ? { elicitation: {} } : {} },
  );
  if (options.elicit) {
    const action = options.elicit;
    client.setRequestHandler(
      ElicitRequestSchema,
      () => action === "accept" ? { action, content: { approve: true } } : { action },
    );
  }
  const logs: Harness["logs"] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push({ level: n.params.level, data: n.params.data });
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.connect(serverSide);
  await client.connect(clientSide);
  if (!options.defaultLevel) await client.setLoggingLevel("debug");
  return {
    client,
    logs,
    calls,
    notifyToolsChanged: () => mcp.notifyToolsChanged(),
    async [Symbol.asyncDispose]() {
      await client.close();
      await mcp.close();
      await registry.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

function textOf(result: Record<string, unknown>): string {
  const content = result.content as Array<{ type: string; text?: string }>;
  return content.map((c) => c.text ?? "").join("\n");
}

/** Resolves when `check` becomes true (polled on each notification). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
}

Deno.test("parseListenAddress: PORT alone binds 127.0.0.1; HOST:PORT and [v6]:PORT are split", () => {
  assert.deepEqual(parseListenAddress("8080"), { hostname: "127.0.0.1", port: 8080 });
  assert.deepEqual(parseListenAddress("0.0.0.0:0"), { hostname: "0.0.0.0", port: 0 });
  assert.deepEqual(parseListenAddress("[::1]:9000"), { hostname: "::1", port: 9000 });
  assert.throws(() => parseListenAddress("host:99999"), ConfigError);
  assert.throws(() => parseListenAddress("nope"), /\[HOST:\]PORT/);
});

Deno.test("isLoopback: only localhost, 127.0.0.0/8 and ::1 count as loopback", () => {
  for (const h of ["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"]) {
    assert.ok(isLoopback(h), h);
  }
  for (const h of ["0.0.0.0", "192.168.1.2", "evil.example.com", "::", ""]) {
    assert.ok(!isLoopback(h), h);
  }
});

Deno.test("serveHttp refuses a non-loopback address without a token, before binding", async () => {
  const registry = {
    loaded: () => [],
    list: () => [],
    call: () => Promise.reject(),
    unknownToolMessage: () => "",
  };
  await assert.rejects(
    () => serveHttp(registry as unknown as McpRegistry, { hostname: "0.0.0.0", port: 0 }),
    (err: Error) => err instanceof ConfigError && /without a token/.test(err.message),
  );
});

Deno.test("tools/list shows fixture tools with JSON Schema, annotations and corral _meta", async () => {
  await using h = await connect();
  const { tools } = await h.client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ["Guarded", "Sleep", "Steps"]);
  const steps = tools.find((t) => t.name === "Steps")!;
  const props = steps.inputSchema.properties as Record<string, { description?: string }>;
  assert.equal(props.steps.description, "How many steps to report");
  assert.equal(steps.annotations?.readOnlyHint, true);
  assert.equal(steps.annotations?.destructiveHint, false);
  assert.equal(steps.annotations?.title, "Steps");
  assert.equal(steps._meta?.["corral/toolset"], "fixture");
  assert.equal(steps._meta?.["corral/permissions"], "");
});

Deno.test("progress reports become notifications/progress with strictly increasing values", async () => {
  await using h = await connect();
  const seen: Progress[] = [];
  const result = await h.client.callTool({ name: "Steps", arguments: { steps: 5 } }, undefined, {
    onprogress: (p) => seen.push(p),
  });
  assert.equal(result.isError, false);
  assert.deepEqual(seen.map((p) => p.progress), [1, 2, 3, 4, 5]);
  assert.ok(seen.every((p) => p.total === 5));
  assert.equal(seen[0].message, "step 1");
  assert.deepEqual(result.structuredContent, { success: true, steps: 5 });
});

Deno.test("other reports and tool logs become log notifications, filtered by logging/setLevel", async () => {
  await using h = await connect({ defaultLevel: true });
  await h.client.callTool({ name: "Steps", arguments: { steps: 1 } });
  assert.deepEqual(h.logs.map((l) => l.level), ["warning"], "default level: warning");
  h.logs.length = 0;
  await h.client.setLoggingLevel("debug");
  await h.client.callTool({ name: "Steps", arguments: { steps: 1 } });
  assert.ok(
    h.logs.some((l) => l.level === "info" && l.data === "beginning"),
    JSON.stringify(h.logs),
  );
  assert.ok(h.logs.some((l) => l.level === "debug" && String(l.data).includes("a tool log line")));
  assert.ok(h.logs.some((l) => l.level === "warning" && l.data === "all steps done"));
  h.logs.length = 0;
  await h.client.setLoggingLevel("warning");
  await h.client.callTool({ name: "Steps", arguments: { steps: 1 } });
  assert.deepEqual(h.logs.map((l) => l.level), ["warning"]);
});

Deno.test("bad arguments give a tool error result naming the parameter", async () => {
  await using h = await connect();
  const result = await h.client.callTool({ name: "Sleep", arguments: { ms: "long", extra: 1 } });
  assert.equal(result.isError, true);
  const text = textOf(result);
  assert.match(text, /- ms: Expected number, received string/);
  assert.match(text, /unknown parameter "extra"/);
  assert.equal((result.structuredContent as ToolResult).success, false);
});

Deno.test("an unknown tool is a protocol error (InvalidParams) with suggestions", async () => {
  await using h = await connect();
  await assert.rejects(
    () => h.client.callTool({ name: "Stepz", arguments: {} }),
    (err: Error & { code?: number }) =>
      err.code === -32602 && /did you mean: Steps/.test(err.message),
  );
});

Deno.test("cancelling a call stops its sandbox call, and the server serves the next call", async () => {
  await using h = await connect();
  const abort = new AbortController();
  const pending = h.client.callTool({ name: "Sleep", arguments: { ms: 50_000 } }, undefined, {
    signal: abort.signal,
  });
  await until(() => h.logs.some((l) => l.data === "sleeping"));
  abort.abort();
  await assert.rejects(pending);
  // The registry call itself ended as cancelled (a finished sleep would say success).
  const ended = await h.calls[0];
  assert.equal(ended.success, false);
  assert.match(String(ended.error), /cancelled/);
  const next = await h.client.callTool({ name: "Steps", arguments: { steps: 1 } });
  assert.equal(next.isError, false);
});

Deno.test("over --max-concurrent and --max-queue calls get a tool error result saying so", async () => {
  await using h = await connect({ maxConcurrent: 1, maxQueue: 0 });
  const abort = new AbortController();
  const first = h.client.callTool({ name: "Sleep", arguments: { ms: 50_000 } }, undefined, {
    signal: abort.signal,
  });
  await until(() => h.logs.some((l) => l.data === "sleeping"));
  const second = await h.client.callTool({ name: "Steps", arguments: { steps: 1 } });
  assert.equal(second.isError, true);
  assert.match(textOf(second), /too busy: 1 calls running and 0 waiting \(--max-concurrent 1/);
  abort.abort();
  await assert.rejects(first);
  await h.calls[0];
});

Deno.test("confirmation without elicitation refuses and says how to approve", async () => {
  await using h = await connect();
  const result = await h.client.callTool({ name: "Guarded", arguments: {} });
  assert.equal(result.isError, true);
  assert.match(textOf(result), /needs confirmation: approve it .*permissions\.json/);
});

Deno.test("confirmation asks the client through elicitation: accept runs the tool", async () => {
  await using h = await connect({ elicit: "accept" });
  const result = await h.client.callTool({ name: "Guarded", arguments: {} });
  assert.equal(result.isError, false);
  assert.deepEqual(result.structuredContent, { success: true, ran: true });
});

Deno.test("confirmation through elicitation: decline refuses the call", async () => {
  await using h = await connect({ elicit: "decline" });
  const result = await h.client.callTool({ name: "Guarded", arguments: {} });
  assert.equal(result.isError, true);
  assert.match(textOf(result), /not confirmed/);
});

Deno.test("confirmation policy 'always' runs without asking a client that cannot elicit", async () => {
  await using h = await connect({ policy: '{"tools":{"Guarded":{"confirm":"always"}}}' });
  const result = await h.client.callTool({ name: "Guarded", arguments: {} });
  assert.equal(result.isError, false);
});

Deno.test("notifyToolsChanged sends notifications/tools/list_changed", async () => {
  await using h = await connect();
  let changed = 0;
  h.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
  await h.notifyToolsChanged();
  await until(() => changed > 0);
  assert.equal(changed, 1);
  const caps = h.client.getServerCapabilities();
  assert.equal(caps?.tools?.listChanged, true);
  assert.ok(caps?.logging);
});
