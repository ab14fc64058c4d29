// Hosted servers through a real `corral mcp` (stdio) and an SDK client:
// - one server whose resources and prompts fail, and one that never answers
//   them, beside the real server-everything: the listings still hold
//   everything's, in time, and the client is told which servers were left out;
// - sampling with tools (2025-11-25) in both directions: the server asks with
//   tools, the client answers with a content array holding a tool use, the
//   server sends the tool's result back as a tool_result block; under the
//   ask caps (max_asks), and refused for a client without `sampling.tools`.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  CreateMessageRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { fixtureServer, HOSTED_FIXTURES } from "../../../testing/mod.ts";
import {
  approve,
  type HostedLayout,
  hostedLayout,
  hostedMcpSpawn,
  hostedRegistry,
} from "../../_hosted_helpers.ts";
import { LIST_TIMEOUT_MS } from "../../../core/hosted/hosted_listings.ts";

const HOSTILE = join(HOSTED_FIXTURES, "hostile_server.ts");
const hostile = (resources?: string) => ({
  command: fixtureServer(HOSTILE),
  ...(resources ? { env: { HOSTILE_RESOURCES: resources } } : {}),
});

/** Approve `servers`, then connect an SDK client with `capabilities` to `corral mcp`. */
async function _corralMcp(
  l: HostedLayout,
  servers: Record<string, unknown>,
  permissions: Record<string, unknown>,
  capabilities: Record<string, unknown>,
): Promise<Client> {
  const first = await hostedRegistry(l, servers, permissions);
  for (const name of Object.keys(servers)) await approve(first.registry, name);
  await first.registry.close();
  await Deno.writeTextFile(join(l.base, "corral.json"), JSON.stringify({ servers }));
  await Deno.writeTextFile(
    join(l.base, "permissions.json"),
    JSON.stringify({ servers: permissions }),
  );
  const transport = new StdioClientTransport(hostedMcpSpawn(l));
  const client = new Client({ name: "hosted-listings", version: "1.0.0" }, { capabilities });
  await client.connect(transport);
  return client;
}

Deno.test("a server whose listings fail, and one that never answers them, leave the others' resources, templates and prompts listed; the client is told which were left out", async () => {
  await using l = await hostedLayout();
  const servers = {
    everything: { npm: "@modelcontextprotocol/server-everything@2026.8.31", args: ["stdio"] },
    down: hostile("fail"),
    stuck: hostile("hang"),
  };
  const client = await _corralMcp(l, servers, { everything: {}, down: {}, stuck: {} }, {});
  const logs: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(String(n.params.data));
  });
  try {
    const started = performance.now();
    const [{ resources }, { resourceTemplates }, { prompts }] = await Promise.all([
      client.listResources(),
      client.listResourceTemplates(),
      client.listPrompts(),
    ]);
    const took = performance.now() - started;
    assert.ok(resources.length > 0, "everything's resources are listed");
    assert.ok(resources.every((r) => r._meta?.["corral/server"] === "everything"));
    assert.ok(resourceTemplates.some((t) => t.uriTemplate.includes("{resourceId}")));
    assert.ok(prompts.length > 0);
    // The stuck server costs one listing timeout, not the default request timeout (60 s).
    assert.ok(took < LIST_TIMEOUT_MS + 20_000, `listing took ${took} ms`);
    // A resource of the healthy server is still read.
    const read = await client.readResource({ uri: resources[0].uri });
    assert.equal(read.contents[0].uri, resources[0].uri);
    await new Promise((r) => setTimeout(r, 200));
    for (const what of ["resources/list", "resources/templates/list", "prompts/list"]) {
      const line = logs.find((x) => x.startsWith(`${what}:`));
      assert.ok(line, `no log notification for ${what}: ${JSON.stringify(logs)}`);
      assert.match(line, /server "down": .*database is down/);
      assert.match(line, new RegExp(`server "stuck" did not answer within ${LIST_TIMEOUT_MS} ms`));
      assert.doesNotMatch(line, /everything/);
    }
    // The healthy server still serves its tools.
    const echo = await client.callTool({ name: "echo", arguments: { message: "still here" } });
    assert.match(JSON.stringify(echo.content), /still here/);
  } finally {
    await client.close();
  }
});

Deno.test("sampling with tools passes through both ways: tools and a tool result to the client, a content array with tool use back; a client without sampling.tools is refused clearly", async () => {
  await using l = await hostedLayout();
  const servers = { hostile: hostile() };
  const client = await _corralMcp(l, servers, { hostile: {} }, {
    sampling: { tools: {} },
  });
  const asked: Array<Record<string, unknown>> = [];
  client.setRequestHandler(CreateMessageRequestSchema, (r) => {
    asked.push(r.params as Record<string, unknown>);
    if (asked.length === 1) {
      return {
        role: "assistant",
        model: "test-model",
        stopReason: "toolUse",
        content: [
          { type: "text", text: "let me look" },
          { type: "tool_use", id: "call-1", name: "weather", input: { city: "Oslo" } },
        ],
      } as never;
    }
    return { role: "assistant", model: "test-model", content: { type: "text", text: "sunny!" } };
  });
  try {
    const r = await client.callTool({ name: "sample_tools", arguments: {} });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    const text = (r.content as Array<{ text: string }>)[0].text;
    const { first, second } = JSON.parse(text);
    // The client's array, tool use included, reached the server as it was.
    assert.equal(first.stopReason, "toolUse");
    assert.deepEqual(first.content[1], {
      type: "tool_use",
      id: "call-1",
      name: "weather",
      input: { city: "Oslo" },
    });
    assert.equal(second.content.text, "sunny!");
    // The server's tools and its tool result reached the client as it sent them.
    assert.equal(asked.length, 2);
    assert.deepEqual((asked[0].tools as Array<{ name: string }>).map((t) => t.name), ["weather"]);
    const last = (asked[1].messages as Array<{ content: unknown }>).at(-1)!;
    assert.deepEqual(last.content, [{
      type: "tool_result",
      toolUseId: "call-1",
      content: [{ type: "text", text: "sunny" }],
    }]);
  } finally {
    await client.close();
  }
  const asks = (await Deno.readTextFile(l.audit)).split("\n").filter(Boolean).map((x) =>
    JSON.parse(x)
  ).filter((x) => x.kind === "ask");
  assert.equal(asks.filter((a) => a.outcome === "answered").length, 2, JSON.stringify(asks));

  // Under the ask caps: one question per call here, the second is refused and audited.
  await using l2 = await hostedLayout();
  const capped = await _corralMcp(l2, servers, { hostile: { max_asks: 1 } }, {
    sampling: { tools: {} },
  });
  let n = 0;
  capped.setRequestHandler(CreateMessageRequestSchema, () => {
    n++;
    return {
      role: "assistant",
      model: "m",
      content: [{ type: "tool_use", id: "c", name: "weather", input: {} }],
    } as never;
  });
  try {
    const r = await Promise.race([
      capped.callTool({ name: "sample_tools", arguments: {} }),
      new Promise((resolve) => setTimeout(() => resolve("pending"), 15_000)),
    ]);
    assert.equal(n, 1, "the second question reached the client");
    assert.notEqual(r, undefined);
  } finally {
    await capped.close();
  }
  const capAudit = await Deno.readTextFile(l2.audit);
  assert.match(capAudit, /"kind":"ask".*"outcome":"denied".*max_asks/);

  // A client that cannot sample with tools: the question is refused, naming why.
  await using l3 = await hostedLayout();
  const plain = await _corralMcp(l3, servers, { hostile: {} }, { sampling: {} });
  let reached = 0;
  plain.setRequestHandler(CreateMessageRequestSchema, () => {
    reached++;
    return { role: "assistant", model: "m", content: { type: "text", text: "x" } };
  });
  try {
    const r = await Promise.race([
      plain.callTool({ name: "sample_tools", arguments: {} }),
      new Promise((resolve) => setTimeout(() => resolve("pending"), 15_000)),
    ]);
    assert.equal(reached, 0);
    assert.notEqual(r, undefined);
  } finally {
    await plain.close();
  }
  const plainAudit = await Deno.readTextFile(l3.audit);
  assert.match(plainAudit, /does not support sampling with tools/);
});
