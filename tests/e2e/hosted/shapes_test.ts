// A hosted server's tool declares icons, an output schema and task support: through a real
// `corral mcp` (stdio) SDK clients of both lines list them as approved (only icons a client may
// fetch safely: https and data:image; task support on neither revision's wire: 2026-07-28 has
// no `execution`, and 2025-11-25's would ask for tasks corral does not serve), and its calls answer with the server's own structured content, which each SDK client
// checks against the output schema (it throws on a mismatch); an error answers without
// structured content.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Client as V2Client } from "@modelcontextprotocol/client";
import { StdioClientTransport as V2Stdio } from "@modelcontextprotocol/client/stdio";
import { fixtureServer, HOSTED_FIXTURES } from "../../../testing/mod.ts";
import { approve, hostedLayout, hostedMcpSpawn, hostedRegistry } from "../../_hosted_helpers.ts";

const SHAPED = join(HOSTED_FIXTURES, "shaped_server.ts");

Deno.test("a hosted tool's icons and output schema reach clients of both SDK lines (its task support stays corral's); its structured content is the server's own", async () => {
  await using l = await hostedLayout();
  const servers = { shaped: { command: fixtureServer(SHAPED) } };
  const first = await hostedRegistry(l, servers, { shaped: {} });
  await approve(first.registry, "shaped");
  await first.registry.close();
  await Deno.writeTextFile(join(l.base, "corral.json"), JSON.stringify({ servers }));
  await Deno.writeTextFile(
    join(l.base, "permissions.json"),
    JSON.stringify({ servers: { shaped: {} } }),
  );
  const spawn = hostedMcpSpawn(l);
  const client = new Client({ name: "hosted-shapes", version: "1.0.0" });
  await client.connect(new StdioClientTransport(spawn));
  try {
    const { tools } = await client.listTools();
    const weather = tools.find((t) => t.name.endsWith("weather"));
    assert.ok(weather, JSON.stringify(tools.map((t) => t.name)));
    assert.deepEqual(weather.outputSchema, {
      type: "object",
      properties: { city: { type: "string" }, celsius: { type: "number" } },
      required: ["city", "celsius"],
      additionalProperties: false,
    });
    assert.deepEqual(weather.icons, [
      { src: "https://example.com/sun.png", mimeType: "image/png", sizes: ["48x48"] },
      { src: "data:image/svg+xml;base64,PHN2Zy8+", mimeType: "image/svg+xml", theme: "dark" },
    ]);
    // 2025-11-25: corral serves no tasks of that revision, so none is offered.
    assert.equal(weather.execution, undefined);
    // The SDK client checks structuredContent against the listed outputSchema.
    const sunny = await client.callTool({ name: weather.name, arguments: { city: "Oslo" } });
    assert.equal(sunny.isError, false, JSON.stringify(sunny));
    assert.deepEqual(sunny.structuredContent, { city: "Oslo", celsius: 21.5 });
    const none = await client.callTool({ name: weather.name, arguments: { city: "Atlantis" } });
    assert.equal(none.isError, true);
    assert.equal(none.structuredContent, undefined);
    assert.match(JSON.stringify(none.content), /no such city/);
  } finally {
    await client.close();
  }
  const v2 = new V2Client({ name: "hosted-shapes-v2", version: "1" }, {
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  await v2.connect(new V2Stdio(spawn));
  try {
    assert.equal(v2.getNegotiatedProtocolVersion(), "2026-07-28");
    const { tools } = await v2.listTools();
    const weather = tools.find((t) => t.name.endsWith("weather"))!;
    // 2026-07-28 deleted `execution` from a tool: the server decides what is a task (SEP-2663).
    assert.equal((weather as { execution?: unknown }).execution, undefined);
    assert.equal(weather.icons?.length, 2);
    assert.equal(weather.outputSchema?.additionalProperties, false);
    const sunny = await v2.callTool({ name: weather.name, arguments: { city: "Bergen" } });
    assert.deepEqual(sunny.structuredContent, { city: "Bergen", celsius: 21.5 });
  } finally {
    await v2.close();
  }
});
