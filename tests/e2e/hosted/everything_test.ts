// @modelcontextprotocol/server-everything hosted by corral, end to end: an
// SDK client of `corral mcp` (stdio) sees its tools, progress, sampling,
// elicitation, content blocks, structured content, resources and prompts.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { Client as V2Client } from "@modelcontextprotocol/client";
import { StdioClientTransport as V2Stdio } from "@modelcontextprotocol/client/stdio";
import { approve, hostedLayout, hostedMcpSpawn, hostedRegistry } from "../../_hosted_helpers.ts";

const EVERYTHING = {
  everything: { npm: "@modelcontextprotocol/server-everything@2026.8.31", args: ["stdio"] },
};

type Layout = Awaited<ReturnType<typeof hostedLayout>>;

/** server-everything approved and configured in `l`; how `corral mcp` (stdio) is started there. */
async function everything(l: Layout) {
  const first = await hostedRegistry(l, EVERYTHING, { everything: {} });
  await approve(first.registry, "everything");
  await first.registry.close();
  await Deno.writeTextFile(join(l.base, "corral.json"), JSON.stringify({ servers: EVERYTHING }));
  await Deno.writeTextFile(
    join(l.base, "permissions.json"),
    JSON.stringify({ servers: { everything: {} } }),
  );
  return hostedMcpSpawn(l);
}

Deno.test("server-everything through corral mcp: progress, sampling, elicitation, content, resources, prompts", async () => {
  await using l = await hostedLayout();
  const transport = new StdioClientTransport(await everything(l));
  const client = new Client(
    { name: "hosted-e2e", version: "1.0.0" },
    { capabilities: { sampling: {}, elicitation: {} } },
  );
  let sampled = 0, elicited = 0;
  client.setRequestHandler(CreateMessageRequestSchema, () => {
    sampled++;
    return {
      role: "assistant",
      model: "test-model",
      content: { type: "text", text: "the model says hi" },
    };
  });
  client.setRequestHandler(ElicitRequestSchema, () => {
    elicited++;
    return { action: "accept", content: { color: "green" } };
  });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    assert.ok(names.includes("echo") && names.includes("get-tiny-image"), names.join(","));
    const echoTool = tools.find((t) => t.name === "echo")!;
    assert.equal(echoTool.annotations?.idempotentHint, true); // kept as the server gave it
    assert.equal(echoTool._meta?.["corral/toolset"], "everything");

    const echo = await client.callTool({ name: "echo", arguments: { message: "hello" } });
    assert.match(JSON.stringify(echo.content), /hello/);

    // Progress notifications pass through.
    const progress: number[] = [];
    const long = await client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 3 } },
      CallToolResultSchema,
      { onprogress: (p) => progress.push(p.progress) },
    );
    assert.equal(long.isError, false, JSON.stringify(long));
    assert.ok(progress.length >= 2, `progress: ${progress}`);

    // Cancellation: the caller gives up; corral stops waiting at once and still answers.
    const abort = new AbortController();
    const started = performance.now();
    const cancelled = client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 30, steps: 30 } },
      CallToolResultSchema,
      { signal: abort.signal },
    );
    setTimeout(() => abort.abort(), 300);
    await assert.rejects(cancelled);
    assert.ok(performance.now() - started < 10_000);
    assert.match(
      JSON.stringify(await client.callTool({ name: "echo", arguments: { message: "still" } })),
      /still/,
    );

    // Log messages of the server during a call reach the caller.
    const logs: string[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push(JSON.stringify(n.params.data));
    });
    await client.setLoggingLevel("debug");
    await client.callTool({ name: "toggle-simulated-logging", arguments: {} });
    await client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 3, steps: 3 } },
    );
    await client.callTool({ name: "toggle-simulated-logging", arguments: {} });
    assert.ok(logs.length > 0, "no log message reached the caller");

    // Sampling: the hosted server asks corral's caller.
    const s = await client.callTool({
      name: "trigger-sampling-request",
      arguments: { prompt: "hi", maxTokens: 10 },
    });
    assert.equal(sampled, 1);
    assert.match(JSON.stringify(s.content), /the model says hi/);

    // Elicitation too.
    const e = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    assert.ok(elicited >= 1, JSON.stringify(e));

    // Content blocks: an image.
    const img = await client.callTool({ name: "get-tiny-image", arguments: {} });
    const blocks = img.content as Array<{ type: string; mimeType?: string }>;
    assert.ok(blocks.some((b) => b.type === "image" && b.mimeType === "image/png"));

    // Structured content.
    const st = await client.callTool({
      name: "get-structured-content",
      arguments: { location: "Chicago" },
    });
    assert.match(JSON.stringify(st.structuredContent), /temperature/i);

    // Resources and prompts, listed and read through corral.
    const { resources } = await client.listResources();
    const { resourceTemplates } = await client.listResourceTemplates();
    const text = resourceTemplates.find((t) => t.uriTemplate.includes("text/{resourceId}"));
    assert.ok(text, JSON.stringify(resourceTemplates));
    assert.equal(text._meta?.["corral/server"], "everything");
    const uri = resources[0]?.uri ?? text.uriTemplate.replace("{resourceId}", "1");
    const read = await client.readResource({ uri });
    assert.ok(read.contents.length > 0);
    assert.equal(read.contents[0].uri, uri);
    const { prompts } = await client.listPrompts();
    assert.ok(prompts.length > 0);
    const simple = prompts.find((p) => !p.arguments?.some((a) => a.required)) ?? prompts[0];
    const got = await client.getPrompt({ name: simple.name, arguments: {} });
    assert.ok(got.messages.length > 0);
  } finally {
    await client.close();
  }
  const audit = (await Deno.readTextFile(l.audit)).split("\n").filter(Boolean).map((x) =>
    JSON.parse(x)
  );
  assert.ok(
    audit.some((r) => r.tool === "echo" && r.outcome === "success" && r.toolset === "everything"),
  );
  assert.ok(audit.some((r) => r.kind === "ask"));
});

Deno.test("a 2026-07-28 client: the hosted (2025-11-25) server's sampling and elicitation come back as rounds of the call", async () => {
  await using l = await hostedLayout();
  const client = new V2Client({ name: "hosted-v2", version: "1.0.0" }, {
    capabilities: { sampling: {}, elicitation: {} },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  const asked: string[] = [];
  client.setRequestHandler("sampling/createMessage", () => {
    asked.push("sampling");
    return {
      role: "assistant",
      model: "test-model",
      content: { type: "text", text: "the model says hi" },
    } as never;
  });
  client.setRequestHandler("elicitation/create", () => {
    asked.push("elicitation");
    return { action: "accept", content: { color: "green" } } as never;
  });
  await client.connect(new V2Stdio(await everything(l)));
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), "2026-07-28");
    const s = await client.callTool({
      name: "trigger-sampling-request",
      arguments: { prompt: "hi", maxTokens: 10 },
    });
    assert.match(JSON.stringify(s), /the model says hi/);
    const e = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
    assert.doesNotMatch(JSON.stringify(e), /"isError":true/, JSON.stringify(e));
    assert.deepEqual(asked, ["sampling", "elicitation"], "each question reached the client once");
  } finally {
    await client.close();
  }
  const audit = (await Deno.readTextFile(l.audit)).split("\n").filter(Boolean).map((x) =>
    JSON.parse(x)
  );
  assert.ok(audit.some((r) => r.kind === "ask" && r.ask === "elicit" && r.outcome === "answered"));
});
