// `corral mcp` on stdio starts ahead the sandbox its last session in the folder started first
// (core/cli/prestart_recipe.ts prestartMcp): a plan with no write grant only, taken only when
// the plan worked out now is exactly the kept one, and the answers stay right either way.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CORRAL_ARGS, ROOT } from "../../../testing/mod.ts";
import { childEnv, tempWorkspace, textOf } from "../../_mcp_helpers.ts";

/** One stdio session: run `calls` in order, return their texts; closes the server. */
async function _session(
  ws: string,
  cache: string,
  calls: Array<[string, Record<string, unknown>]>,
): Promise<string[]> {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws, "-r", "-w"],
    env: childEnv(cache),
    cwd: ROOT,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => stderr += new TextDecoder().decode(chunk));
  const client = new Client({ name: "corral-prestart", version: "1.0.0" });
  await client.connect(transport);
  try {
    const out: string[] = [];
    for (const [name, args] of calls) {
      const result = await client.callTool({ name, arguments: args });
      assert.equal(result.isError, false, `${name}: ${textOf(result)}\nstderr:\n${stderr}`);
      out.push(textOf(result));
    }
    return out;
  } finally {
    await client.close();
  }
}

function _recipes(cache: string): string[] {
  try {
    return [...Deno.readDirSync(join(cache, "prestart"))].map((e) =>
      Deno.readTextFileSync(join(cache, "prestart", e.name))
    );
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  }
}

Deno.test("corral mcp on stdio: the first read-only sandbox is started ahead next time, for the same plan only", async () => {
  await using ws = await tempWorkspace();
  const read: [string, Record<string, unknown>] = ["ReadFile", { filepath: "notes.txt" }];
  const [first] = await _session(ws.dir, ws.cache, [read]);
  assert.match(first, /one two three/);
  const kept = _recipes(ws.cache);
  assert.equal(kept.length, 1, "the session's first launch plan is kept");
  assert.doesNotMatch(kept[0], /"write":\["\//, "no write grant is ever started ahead");
  // Started ahead and adopted: the same answer, and a file changed since is read as it is now.
  await Deno.writeTextFile(join(ws.dir, "notes.txt"), "six seven\n");
  const [second] = await _session(ws.dir, ws.cache, [read]);
  assert.match(second, /six seven/);
  assert.deepEqual(_recipes(ws.cache), kept, "the same plan, kept as it was");
  // A changed policy changes the plan: the early sandbox is not taken, the answer is right.
  await Deno.mkdir(join(ws.cache, "config"), { recursive: true });
  await Deno.writeTextFile(
    join(ws.cache, "config", "permissions.json"),
    '{"toolsets": {"files": {"memory_mb": 300}}}',
  );
  const [third] = await _session(ws.dir, ws.cache, [read]);
  assert.match(third, /six seven/);
  const now = _recipes(ws.cache);
  assert.equal(now.length, 1);
  assert.notEqual(now[0], kept[0], "the new plan is kept");
});

Deno.test("corral mcp on stdio: a session whose first sandbox may write keeps no plan with a write grant", async () => {
  await using ws = await tempWorkspace();
  // Control: the write happened, so a sandbox with a write grant did start.
  await _session(ws.dir, ws.cache, [["CreateFile", { filepath: "made.txt", content: "canary\n" }]]);
  assert.equal(await Deno.readTextFile(join(ws.dir, "made.txt")), "canary\n");
  assert.deepEqual(_recipes(ws.cache), [], "a sandbox that may write is never kept");
  // A read-only launch after it in the same session is the one kept.
  await _session(ws.dir, ws.cache, [
    ["CreateFile", { filepath: "made2.txt", content: "x\n" }],
    ["ReadFile", { filepath: "notes.txt" }],
  ]);
  const kept = _recipes(ws.cache);
  assert.equal(kept.length, 1);
  assert.doesNotMatch(kept[0], /"write":\["\//);
});
