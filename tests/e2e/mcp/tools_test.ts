// The conformance suite's tools (tests/fixtures/mcp_conformance/) over stdio
// with the SDK client, and on the CLI: rich results, sampling and
// elicitation from a sandbox, JSON Schema as written.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { CORRAL_ARGS, ROOT } from "../../../testing/mod.ts";
import { childEnv, tempWorkspace } from "../../_mcp_helpers.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

const TOOLS = join(ROOT, "tests", "fixtures", "mcp_conformance");

Deno.test("over stdio: images, resources, sampling and elicitation travel between a sandboxed plugin and the SDK client", async () => {
  await using ws = await tempWorkspace();
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws.dir, "--audit", join(ws.cache, "audit.jsonl")],
    env: { ...childEnv(ws.cache), CORRAL_TOOL_DIRS: TOOLS },
    stderr: "pipe",
  });
  const client = new Client(
    { name: "stdio-tools", version: "1" },
    { capabilities: { sampling: {}, elicitation: {} } },
  );
  const asked: string[] = [];
  client.setRequestHandler(CreateMessageRequestSchema, (req) => {
    asked.push(`sample:${JSON.stringify(req.params.messages[0].content)}`);
    return {
      role: "assistant",
      content: { type: "text", text: "forty-two" },
      model: "test",
      stopReason: "endTurn",
    };
  });
  client.setRequestHandler(ElicitRequestSchema, (req) => {
    asked.push(`elicit:${req.params.message}`);
    return { action: "accept", content: { username: "ada", email: "ada@example.com" } };
  });
  await client.connect(transport);
  try {
    const image = await client.callTool({ name: "test_image_content", arguments: {} });
    const block = (image.content as Array<{ type: string; mimeType?: string; data?: string }>)[0];
    assert.equal(block.type, "image");
    assert.equal(block.mimeType, "image/png");
    assert.match(String(block.data), /^iVBOR/);
    const mixed = await client.callTool({ name: "test_multiple_content_types", arguments: {} });
    assert.deepEqual((mixed.content as Array<{ type: string }>).map((c) => c.type), [
      "text",
      "image",
      "resource",
    ]);
    const sample = await client.callTool({
      name: "test_sampling",
      arguments: { prompt: "Meaning?" },
    });
    assert.match(JSON.stringify(sample.content), /LLM response: forty-two/);
    const elicit = await client.callTool({
      name: "test_elicitation",
      arguments: { message: "Who?" },
    });
    assert.match(JSON.stringify(elicit.content), /action: accept.*ada@example\.com/);
    assert.deepEqual(asked, ['sample:{"type":"text","text":"Meaning?"}', "elicit:Who?"]);
    const listed = (await client.listTools()).tools.find((t) =>
      t.name === "json_schema_2020_12_tool"
    );
    const schema = listed?.inputSchema as Record<string, unknown>;
    assert.equal(schema.$schema, "https://json-schema.org/draft/2020-12/schema");
    assert.ok(schema.$defs && schema.additionalProperties === false);
    const bad = await client.callTool({
      name: "json_schema_2020_12_tool",
      arguments: { extra: 1 },
    });
    assert.equal(bad.isError, true, "arguments are checked against the JSON Schema");
  } finally {
    await client.close();
  }
  const audit = (await Deno.readTextFile(join(ws.cache, "audit.jsonl"))).trim().split("\n")
    .map((l) => JSON.parse(l));
  assert.ok(audit.some((r) => r.kind === "ask" && r.ask === "sample" && r.outcome === "answered"));
  assert.ok(audit.some((r) => r.kind === "ask" && r.ask === "elicit"));
});

Deno.test("on the CLI without a terminal, a tool that asks gets a clear error, and base64 is summarized", async () => {
  const { ws } = await tempLayout();
  const env = { CORRAL_TOOL_DIRS: TOOLS };
  const sample = await runCli(
    ["call", "test_sampling", "--workspace", ws, "--args", '{"prompt":"hi"}'],
    { env },
  );
  assert.equal(sample.code, 1);
  assert.match(sample.stdout, /no client can answer a sample request here/);
  const image = await runCli(["call", "test_image_content", "--workspace", ws, "--args", "{}"], {
    env,
  });
  assert.equal(image.code, 0, image.stderr);
  assert.match(image.stdout, /<image\/png, \d+ bytes, not shown>/);
  assert.doesNotMatch(image.stdout, /iVBOR/);
});
