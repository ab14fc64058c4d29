/**
 * An identity's questions per call through the real HTTP server: with
 * `sampling_per_call: 0` a tool's ctx.sample() is refused before the
 * client is asked; with 1 it reaches the client of its own call.
 */
import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { parseConfig } from "../../../core/config/corral_config.ts";
import { parsePolicy } from "../../../core/config/policy.ts";
import { addToken } from "../../../core/identity/token_store.ts";
import { httpIdentityFromConfig, teamPolicy } from "../../../core/mcp/http_identity.ts";
import { serveHttp } from "../../../core/mcp/serve_http.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { FIXTURES } from "../../../testing/mod.ts";

function askRegistry(workspace: string): Promise<Registry> {
  const policy = parsePolicy("{}", "test-permissions.json", workspace);
  return Registry.create({
    workspace,
    policy,
    noBuiltins: true,
    cacheDir: null,
    sources: [{
      id: "ask",
      kind: "builtin",
      modules: [`${FIXTURES}mcp_conformance/ask_tools.ts`],
      policy: policy.toolset("ask"),
    }],
  });
}

Deno.test("sampling_per_call: 0 refuses a tool's question before the client is asked; 1 lets one through", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_team_ask_" }));
  const registry = await askRegistry(dir);
  const config = parseConfig(
    JSON.stringify({
      identities: {
        carol: { limits: { sampling_per_call: 1 } },
        dave: { limits: { sampling_per_call: 0 } },
      },
      auth: { tokens_file: "tokens.json", workspaces_dir: "people" },
    }),
    `${dir}/corral.json`,
  );
  const policy = teamPolicy(config, dir);
  const registries = new Map<string, Registry>();
  for (const ws of policy.workspaces()) {
    await Deno.mkdir(ws, { recursive: true });
    registries.set(ws, await askRegistry(ws));
  }
  const team = await httpIdentityFromConfig(config, {
    defaultToken: "d".repeat(64),
    serverWorkspace: dir,
    policy,
    registries,
  });
  const server = await serveHttp(registry, { port: 0, token: "d".repeat(64), team });
  const asked: string[] = [];
  const connect = async (name: string) => {
    const token = await addToken(name, `${dir}/tokens.json`);
    const client = new Client({ name, version: "1" }, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, () => {
      asked.push(name);
      return { model: "m", role: "assistant", content: { type: "text", text: `hi ${name}` } };
    });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    return client;
  };
  try {
    const carol = await connect("carol");
    const dave = await connect("dave");
    const text = (r: Awaited<ReturnType<Client["callTool"]>>) =>
      (r.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("\n");
    const ok = await carol.callTool({ name: "test_sampling", arguments: { prompt: "p" } });
    assert.equal(ok.isError, false, text(ok));
    assert.match(text(ok), /LLM response: hi carol/);
    const refused = await dave.callTool({ name: "test_sampling", arguments: { prompt: "p" } });
    assert.equal(refused.isError, true);
    assert.match(text(refused), /no sampling requests \(limits\.sampling_per_call is 0\)/);
    assert.deepEqual(asked, ["carol"], "dave's client was never asked");
    await Promise.all([carol.close(), dave.close()]);
  } finally {
    await server.close();
    await registry.close();
    for (const r of registries.values()) await r.close();
    await Deno.remove(dir, { recursive: true });
  }
});
