/**
 * End-to-end tests of `corral mcp`: the SDK's own `Client` drives a real
 * corral process over stdio and over Streamable HTTP.
 */
import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CORRAL_ARGS,
  INIT_BODY as INIT,
  MCP_POST_HEADERS as ACCEPT,
  ROOT,
} from "../../../testing/mod.ts";
import { childEnv, startHttpCorral, tempWorkspace, textOf } from "../../_mcp_helpers.ts";

/** The checks every transport must pass: initialize, ping, list, calls, errors. */
async function exercise(client: Client): Promise<void> {
  assert.equal(client.getServerVersion()?.name, "corral");
  assert.deepEqual(await client.ping(), {});

  const { tools } = await client.listTools();
  const byName = new Map(tools.map((t) => [t.name, t]));
  const read = byName.get("ReadFile")!;
  assert.equal(read.annotations?.readOnlyHint, true);
  assert.equal(read.annotations?.destructiveHint, false);
  assert.equal(read._meta?.["corral/permissions"], "r");
  const create = byName.get("CreateFile")!;
  assert.equal(create.annotations?.destructiveHint, true);
  assert.equal(create.annotations?.readOnlyHint, false);
  const wc = byName.get("WordCount")!;
  assert.equal(wc.inputSchema.type, "object");
  const props = wc.inputSchema.properties as Record<string, { description?: string }>;
  assert.match(props.filepath.description ?? "", /relative to the workspace/);
  assert.deepEqual(wc.inputSchema.required, ["filepath"]);

  const ok = await client.callTool({ name: "WordCount", arguments: { filepath: "notes.txt" } });
  assert.equal(ok.isError, false);
  assert.equal((ok.structuredContent as { words: number }).words, 5);
  assert.equal(JSON.parse(textOf(ok)).lines, 2);

  const missing = await client.callTool({ name: "ReadFile", arguments: { filepath: "nope.txt" } });
  assert.equal(missing.isError, true);
  assert.match(textOf(missing), /nope\.txt/);

  const bad = await client.callTool({ name: "WordCount", arguments: {} });
  assert.equal(bad.isError, true);
  assert.match(textOf(bad), /- filepath: Required/);

  await assert.rejects(
    () => client.callTool({ name: "WordCounter", arguments: {} }),
    (err: Error & { code?: number }) =>
      err.code === -32602 && /Unknown tool "WordCounter"/.test(err.message),
  );

  // Progress from a plugin in its process sandbox, received in order.
  const seen: Array<{ progress: number; total?: number; message?: string }> = [];
  const steps = await client.callTool({ name: "E2eSteps", arguments: { steps: 4 } }, undefined, {
    onprogress: (p) => seen.push(p),
  });
  assert.equal(steps.isError, false, textOf(steps));
  assert.deepEqual(seen.map((p) => p.progress), [1, 2, 3, 4]);
  assert.deepEqual(seen.map((p) => p.message), ["step 1", "step 2", "step 3", "step 4"]);

  // Cancellation: the call is abandoned, and the server serves the next call.
  const abort = new AbortController();
  let sleeping!: () => void;
  const started = new Promise<void>((r) => sleeping = r);
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    if (n.params.data === "sleeping") sleeping();
  });
  const long = client.callTool({ name: "E2eSleep", arguments: { ms: 60_000 } }, undefined, {
    signal: abort.signal,
    timeout: 120_000,
  });
  await started;
  abort.abort();
  await assert.rejects(long);
  const after = await client.callTool({ name: "E2eSteps", arguments: { steps: 1 } });
  assert.equal(after.isError, false);
}

Deno.test("corral mcp over stdio: SDK client initializes, pings, lists and calls tools", async () => {
  await using ws = await tempWorkspace();
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws.dir, "-r", "-w"],
    env: childEnv(ws.cache),
    cwd: ROOT,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => stderr += new TextDecoder().decode(chunk));
  const client = new Client({ name: "corral-e2e", version: "1.0.0" });
  // A stray line on stdout would reach onerror as a parse failure.
  const errors: Error[] = [];
  client.onerror = (err) => errors.push(err);
  await client.connect(transport);
  try {
    await exercise(client);
  } finally {
    await client.close();
  }
  assert.deepEqual(errors.map((e) => e.message), [], `stderr:\n${stderr}`);
});

Deno.test("corral mcp --http: SDK client over Streamable HTTP initializes, lists and calls tools", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0"], ws);
  assert.match(corral.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
  const client = new Client({ name: "corral-e2e", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(corral.url));
  await client.connect(transport);
  try {
    assert.ok(transport.sessionId, "a stateful server hands out a session id");
    await exercise(client);
  } finally {
    await transport.terminateSession();
    await client.close();
  }
});

Deno.test("corral mcp --http refuses a foreign Origin (403), an oversized body (413) and other paths (404)", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0", "--max-body", "2000"], ws);
  const evil = await fetch(corral.url, {
    method: "POST",
    headers: { ...ACCEPT, Origin: "http://evil.example.com" },
    body: INIT,
  });
  assert.equal(evil.status, 403);
  assert.match((await evil.json()).error.message, /Origin/);

  const big = await fetch(corral.url, {
    method: "POST",
    headers: ACCEPT,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "ping",
      params: { pad: "x".repeat(5000) },
    }),
  });
  assert.equal(big.status, 413);
  await big.body?.cancel();

  const other = await fetch(corral.url.replace(/\/mcp$/, "/other"), {
    method: "POST",
    headers: ACCEPT,
    body: INIT,
  });
  assert.equal(other.status, 404);
  await other.body?.cancel();

  const local = await fetch(corral.url, {
    method: "POST",
    headers: { ...ACCEPT, Origin: new URL(corral.url).origin },
    body: INIT,
  });
  assert.equal(local.status, 200, "a loopback origin is accepted");
  await local.body?.cancel();
});

Deno.test("corral mcp --http --token: requests without the bearer token get 401, with it they work", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--token", "s3cret-token"],
    ws,
  );
  const none = await fetch(corral.url, { method: "POST", headers: ACCEPT, body: INIT });
  assert.equal(none.status, 401);
  assert.match(none.headers.get("www-authenticate") ?? "", /^Bearer/);
  await none.body?.cancel();
  const wrong = await fetch(corral.url, {
    method: "POST",
    headers: { ...ACCEPT, Authorization: "Bearer s3cret-tokeN" },
    body: INIT,
  });
  assert.equal(wrong.status, 401);
  await wrong.body?.cancel();

  const client = new Client({ name: "corral-e2e", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(corral.url), {
      requestInit: { headers: { Authorization: "Bearer s3cret-token" } },
    }),
  );
  try {
    assert.deepEqual(await client.ping(), {});
    assert.ok((await client.listTools()).tools.some((t) => t.name === "WordCount"));
  } finally {
    await client.close();
  }
});

Deno.test("corral mcp --http --stateless: no session id, and each request stands alone", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0", "--stateless"], ws);
  const client = new Client({ name: "corral-e2e", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(corral.url));
  await client.connect(transport);
  try {
    assert.equal(transport.sessionId, undefined);
    const ok = await client.callTool({ name: "WordCount", arguments: { filepath: "notes.txt" } });
    assert.equal((ok.structuredContent as { words: number }).words, 5);
  } finally {
    await client.close();
  }
  // A fresh client needs no session: a lone tools/list is answered.
  const res = await fetch(corral.url, {
    method: "POST",
    headers: { ...ACCEPT, "MCP-Protocol-Version": "2025-06-18" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list", params: {} }),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("mcp-session-id"), null);
  assert.match(await res.text(), /"WordCount"/);
});

Deno.test("corral mcp --http on a non-loopback address without a token exits 2 with a clear message", async () => {
  await using ws = await tempWorkspace();
  const out = await new Deno.Command(Deno.execPath(), {
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws.dir, "-r", "--http", "0.0.0.0:0"],
    env: childEnv(ws.cache),
    stdin: "null",
  }).output();
  assert.equal(out.code, 2);
  const stderr = new TextDecoder().decode(out.stderr);
  assert.match(stderr, /refusing to serve MCP on 0\.0\.0\.0 without a token/);
  assert.match(stderr, /--token/);
  assert.equal(new TextDecoder().decode(out.stdout), "");
});
