/**
 * Clients of both SDK lines, end to end, over stdio and over HTTP with a
 * token: a v1 client (`@modelcontextprotocol/sdk` 1.x, 2025-11-25) and a v2
 * client (`@modelcontextprotocol/client` 2.x, pinned to 2026-07-28, whose
 * questions come back as input-required rounds that it answers through the
 * same handler). Each confirms DeleteFile (a declined confirmation deletes
 * nothing) and answers a tool's own question (`ctx.elicit`).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport as V1Stdio } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport as V1Http } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import {
  Client as V2Client,
  StreamableHTTPClientTransport as V2Http,
} from "@modelcontextprotocol/client";
import { StdioClientTransport as V2Stdio } from "@modelcontextprotocol/client/stdio";
import { CORRAL_ARGS, ROOT } from "../../../testing/mod.ts";
import {
  childEnv,
  startHttpCorral,
  type TempWorkspace,
  tempWorkspace,
} from "../../_mcp_helpers.ts";

const TOOLS = join(ROOT, "tests", "fixtures", "mcp_conformance");
const TOKEN = "clients-test-token-0123456789";

/** What every client answers: approve a run only while `approve` holds; a name. */
interface Answers {
  approve: boolean;
  asked: string[];
}

function answer(a: Answers, params: { message?: string; requestedSchema?: unknown }) {
  a.asked.push(String(params.message));
  const props = (params.requestedSchema as { properties?: Record<string, unknown> })?.properties;
  if (props && "approve" in props) {
    return a.approve ? { action: "accept", content: { approve: true } } : { action: "decline" };
  }
  return { action: "accept", content: { username: "ada", email: "ada@example.org" } };
}

type Call = (name: string, args: Record<string, unknown>) => Promise<{ text: string }>;

/** A connected client of either line, as the checks use it. */
interface Connected {
  call: Call;
  close(): Promise<void>;
}

function stdioParams(ws: TempWorkspace) {
  return {
    command: Deno.execPath(),
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws.dir, "-r", "-w"],
    env: { ...childEnv(ws.cache), CORRAL_TOOL_DIRS: TOOLS },
    cwd: ROOT,
    stderr: "ignore" as const,
  };
}

const textOf = (r: unknown) =>
  ((r as { content?: Array<{ text?: string }> }).content ?? []).map((c) => c.text ?? "").join("\n");

async function v1(transport: V1Stdio | V1Http, a: Answers): Promise<Connected> {
  const client = new V1Client({ name: "v1-client", version: "1" }, {
    capabilities: { elicitation: {} },
  });
  client.setRequestHandler(ElicitRequestSchema, (r) => answer(a, r.params) as never);
  await client.connect(transport);
  return {
    call: async (name, args) => ({
      text: textOf(await client.callTool({ name, arguments: args })),
    }),
    close: () => client.close(),
  };
}

async function v2(transport: V2Stdio | V2Http, a: Answers): Promise<Connected> {
  const client = new V2Client({ name: "v2-client", version: "1" }, {
    capabilities: { elicitation: {} },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  client.setRequestHandler("elicitation/create", (r) => answer(a, r.params) as never);
  await client.connect(transport);
  // Its questions come back as rounds: it speaks the current revision, not 2025-11-25.
  assert.equal(client.getNegotiatedProtocolVersion(), "2026-07-28");
  assert.equal(client.getProtocolEra(), "modern");
  return {
    call: async (name, args) => ({
      text: textOf(await client.callTool({ name, arguments: args })),
    }),
    close: () => client.close(),
  };
}

/** Confirmation (declined, then approved) and a tool's own question, through `c`. */
async function check(c: Connected, a: Answers, ws: TempWorkspace, label: string): Promise<void> {
  const file = join(ws.dir, `${label}.txt`);
  await Deno.writeTextFile(file, "bye");
  a.approve = false;
  const declined = await c.call("DeleteFile", { filepath: `${label}.txt` });
  assert.match(declined.text, /not confirmed|declined|needs confirmation/i, label);
  assert.equal(await Deno.readTextFile(file), "bye", `${label}: declined, nothing deleted`);
  a.approve = true;
  await c.call("DeleteFile", { filepath: `${label}.txt` });
  await assert.rejects(Deno.stat(file), Deno.errors.NotFound, `${label}: approved, deleted`);
  assert.ok(a.asked.some((m) => m.startsWith("Run DeleteFile")), `${label}: asked to confirm`);
  const asked = await c.call("test_elicitation", { message: "Who are you?" });
  assert.match(asked.text, /action: accept.*"username":"ada"/, label);
  assert.ok(a.asked.includes("Who are you?"), `${label}: the tool's question reached the client`);
}

Deno.test("v1 and v2 clients over stdio: confirmation and a tool's question, on both revisions", async () => {
  await using ws = await tempWorkspace();
  for (const [label, connect] of [["v1-stdio", v1], ["v2-stdio", v2]] as const) {
    const a: Answers = { approve: false, asked: [] };
    const transport = label === "v1-stdio"
      ? new V1Stdio(stdioParams(ws))
      : new V2Stdio(stdioParams(ws));
    const c = await (connect as (t: unknown, a: Answers) => Promise<Connected>)(transport, a);
    try {
      await check(c, a, ws, label);
    } finally {
      await c.close();
    }
  }
});

Deno.test("v1 and v2 clients over HTTP with a token: confirmation and a tool's question", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0", "--token", TOKEN], ws, {
    CORRAL_TOOL_DIRS: TOOLS,
  });
  const headers = { Authorization: `Bearer ${TOKEN}` };
  const url = new URL(corral.url);
  const a1: Answers = { approve: false, asked: [] };
  const c1 = await v1(new V1Http(url, { requestInit: { headers } }), a1);
  try {
    await check(c1, a1, ws, "v1-http");
  } finally {
    await c1.close();
  }
  const a2: Answers = { approve: false, asked: [] };
  const c2 = await v2(new V2Http(url, { requestInit: { headers } }), a2);
  try {
    await check(c2, a2, ws, "v2-http");
  } finally {
    await c2.close();
  }
  // Without the token, neither line gets in.
  await assert.rejects(v2(new V2Http(url), { approve: false, asked: [] }));
});
