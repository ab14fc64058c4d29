// `CORRAL_BENCH_MCP_LANES=sdk` (core/mcp/stdio_lane.ts) turns corral's stdio lane off for the
// benchmark's baseline row: the answers stay the same, refusals included.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CORRAL_ARGS, ROOT } from "../../../testing/mod.ts";
import { childEnv, tempWorkspace } from "../../_mcp_helpers.ts";

async function _answers(ws: string, cache: string, lanes?: string): Promise<unknown[]> {
  const env = childEnv(cache);
  if (lanes) env.CORRAL_BENCH_MCP_LANES = lanes;
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws, "-r"],
    env,
    cwd: ROOT,
    stderr: "pipe",
  });
  const client = new Client({ name: "corral-lanes", version: "1.0.0" });
  await client.connect(transport);
  try {
    const read = await client.callTool({ name: "ReadFile", arguments: { filepath: "notes.txt" } });
    // Outside the workspace: the tool refuses it, whichever path carried the call.
    const escape = await client.callTool({
      name: "ReadFile",
      arguments: { filepath: "../../../../etc/hostname" },
    });
    const bad = await client.callTool({ name: "ReadFile", arguments: { filepath: 7 } });
    const unknown = await client.callTool({ name: "NoSuchTool", arguments: {} }).then(
      (r) => r,
      (e: Error) => ({ thrown: e.message }),
    );
    return [read, escape, bad, unknown];
  } finally {
    await client.close();
  }
}

Deno.test("corral mcp on stdio answers the same with its lane off (CORRAL_BENCH_MCP_LANES=sdk)", async () => {
  await using ws = await tempWorkspace();
  const lanes = await _answers(ws.dir, join(ws.cache, "a"));
  const [read, escape] = lanes as Array<{ isError?: boolean; content: Array<{ text: string }> }>;
  assert.equal(read.isError, false);
  assert.match(read.content[0].text, /one two three/);
  assert.equal(escape.isError, true, "the control: a path outside the workspace is refused");
  assert.deepEqual(await _answers(ws.dir, join(ws.cache, "sdk"), "sdk"), lanes);
});
