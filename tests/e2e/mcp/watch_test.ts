import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { CORRAL_ARGS, ROOT } from "../../../testing/mod.ts";
import { childEnv, tempWorkspace } from "../../_mcp_helpers.ts";

const plugin = (name: string) =>
  `import { z } from "zod";
export const TOOL_CONFIG = {
  name: "${name}",
  description: "A plugin tool dropped in while corral runs",
  input_schema: z.object({}),
  function: () => ({ success: true, name: "${name}" }),
};
`;

Deno.test("corral mcp --watch reloads added, changed and removed plugin files and sends list_changed", async () => {
  await using ws = await tempWorkspace();
  const dir = await Deno.makeTempDir({ prefix: "corral_watch_" });
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [...CORRAL_ARGS, "mcp", "--watch", "--workspace", ws.dir, "-r"],
    env: { ...childEnv(ws.cache), CORRAL_TOOL_DIRS: dir },
    cwd: ROOT,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (c: Uint8Array) => stderr += new TextDecoder().decode(c));
  const client = new Client({ name: "watch-test", version: "1.0.0" });
  let notified = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    notified++;
  });
  await client.connect(transport);
  const names = async () => (await client.listTools()).tools.map((t) => t.name);
  const waitFor = async (count: number) => {
    for (let i = 0; i < 200 && notified < count; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(notified, count, `list_changed #${count} arrived\n${stderr}`);
  };
  try {
    assert.ok(!(await names()).includes("Dropped"));
    await Deno.writeTextFile(join(dir, "dropped.ts"), plugin("Dropped"));
    await waitFor(1);
    assert.ok((await names()).includes("Dropped"), "added file loaded");
    const res = await client.callTool({ name: "Dropped", arguments: {} });
    assert.equal((res.structuredContent as { name: string }).name, "Dropped");

    await Deno.writeTextFile(join(dir, "dropped.ts"), plugin("Renamed"));
    await waitFor(2);
    const after = await names();
    assert.ok(after.includes("Renamed") && !after.includes("Dropped"), "changed file reloaded");

    await Deno.remove(join(dir, "dropped.ts"));
    await waitFor(3);
    assert.ok(!(await names()).includes("Renamed"), "removed file dropped");
  } finally {
    await client.close();
    await Deno.remove(dir, { recursive: true });
  }
});
