// Asking the client is bounded: a plugin that floods its client with
// sampling requests is cut at the policy's caps (count, at once, bytes), a
// context kept past its call asks nobody (the same session or another one
// over HTTP), a question still open when its call ends is withdrawn, and
// every refusal is an audit line. Real `corral mcp` processes, SDK clients.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { CORRAL_ARGS, FIXTURES } from "../../../testing/mod.ts";
import {
  childEnv,
  startHttpCorral,
  type TempWorkspace,
  tempWorkspace,
} from "../../_mcp_helpers.ts";

const TOOLS = `${FIXTURES}call_limits`;

/**
 * A client that answers sampling, counting questions and how many are open
 * at once; `delayMs(n)` for the n-th question (Infinity: until withdrawn).
 */
function _sampler(name: string, delayMs: (n: number) => number = () => 0) {
  const seen = { asked: 0, open: 0, maxOpen: 0, withdrawn: 0, texts: [] as string[] };
  const client = new Client({ name, version: "1" }, { capabilities: { sampling: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async (req, extra) => {
    const wait = delayMs(++seen.asked);
    seen.open++;
    seen.maxOpen = Math.max(seen.maxOpen, seen.open);
    const content = req.params.messages[0].content as { text?: string };
    seen.texts.push(String(content.text ?? "").slice(0, 40));
    try {
      if (wait === Infinity) {
        await new Promise<void>((resolve) =>
          extra.signal.addEventListener("abort", () => {
            seen.withdrawn++;
            resolve();
          }, { once: true })
        );
      } else if (wait) await new Promise((r) => setTimeout(r, wait));
      return {
        role: "assistant" as const,
        content: { type: "text" as const, text: "ok" },
        model: "test",
      };
    } finally {
      seen.open--;
    }
  });
  return { client, seen };
}

async function _policy(ws: TempWorkspace, entry: Record<string, unknown>): Promise<string> {
  const file = join(ws.cache, "permissions.json");
  await Deno.writeTextFile(file, JSON.stringify({ plugins: { ask_tools: entry, default: {} } }));
  return file;
}

function _stdio(ws: TempWorkspace, policy: string, audit: string) {
  return new StdioClientTransport({
    command: Deno.execPath(),
    args: [
      ...CORRAL_ARGS,
      "mcp",
      "--workspace",
      ws.dir,
      "--permissions",
      policy,
      "--audit",
      audit,
    ],
    env: { ...childEnv(ws.cache), CORRAL_TOOL_DIRS: TOOLS },
    stderr: "pipe",
  });
}

type AskLine = {
  kind: string;
  tool: string;
  ask: string;
  outcome: string;
  reason?: string;
  identity?: string;
  session?: string;
};

async function _asks(audit: string): Promise<AskLine[]> {
  const text = await Deno.readTextFile(audit);
  return text.trimEnd().split("\n").map((l) => JSON.parse(l)).filter((r) => r.kind === "ask");
}

function _result(r: unknown): Record<string, unknown> {
  return (r as { structuredContent: Record<string, unknown> }).structuredContent;
}

Deno.test("a sampling flood is cut at max_asks (default 20), one at a time at most max_asks_at_once (2); refusals audited", async () => {
  await using ws = await tempWorkspace();
  const audit = join(ws.cache, "audit.jsonl");
  const policy = await _policy(ws, {});
  const { client, seen } = _sampler("flood", () => 20);
  await client.connect(_stdio(ws, policy, audit));
  try {
    const serial = _result(
      await client.callTool({ name: "AskFlood", arguments: { n: 1000 } }),
    );
    assert.equal(serial.answered, 20);
    assert.equal(serial.refused, 980);
    assert.match(String(serial.first_error), /too many requests to the client: 20 in this call/);
    assert.match(String(serial.first_error), /"max_asks".*plugins\.ask_tools/);
    assert.equal(seen.asked, 20, "the client was asked exactly the cap");
    // All at once: never more than two open at the client.
    seen.asked = 0;
    const parallel = _result(
      await client.callTool({ name: "AskFlood", arguments: { n: 200, parallel: true } }),
    );
    assert.ok(seen.maxOpen <= 2, `at most 2 open at once, saw ${seen.maxOpen}`);
    assert.equal(seen.asked, parallel.answered);
    assert.ok((parallel.answered as number) >= 1 && (parallel.answered as number) <= 20);
    assert.match(String(parallel.first_error), /at once: 2 are open.*"max_asks_at_once"/);
    // The host still answers.
    const again = _result(await client.callTool({ name: "AskFlood", arguments: { n: 1 } }));
    assert.equal(again.answered, 1);
  } finally {
    await client.close();
  }
  const lines = await _asks(audit);
  assert.equal(lines.filter((l) => l.outcome === "answered").length, 20 + seen.asked);
  const denied = lines.filter((l) => l.outcome === "denied");
  // The serial flood: 20 refusals one by one, then one line with the count of the rest.
  assert.ok(denied.some((l) => /960 more requests refused/.test(l.reason ?? "")));
  assert.ok(denied.length <= 2 * 21, `a flood does not flood the log: ${denied.length} lines`);
  assert.ok(denied.every((l) => l.tool === "AskFlood" && l.ask === "sample"));
  // Each line names who asked: the local identity, and its one stdio session.
  assert.ok(lines.every((l) => l.identity === "local" && l.session?.startsWith("session:")));
  assert.equal(new Set(lines.map((l) => l.session)).size, 1);
});

Deno.test("the caps are the policy's: max_asks and max_ask_bytes of the plugin's entry", async () => {
  await using ws = await tempWorkspace();
  const audit = join(ws.cache, "audit.jsonl");
  const policy = await _policy(ws, { max_asks: 3, max_ask_bytes: 4096 });
  const { client, seen } = _sampler("caps");
  await client.connect(_stdio(ws, policy, audit));
  try {
    const count = _result(await client.callTool({ name: "AskFlood", arguments: { n: 10 } }));
    assert.equal(count.answered, 3);
    assert.match(String(count.first_error), /3 in this call/);
    const bytes = _result(
      await client.callTool({ name: "AskFlood", arguments: { n: 10, pad: 1500 } }),
    );
    assert.equal(bytes.answered, 2);
    assert.match(String(bytes.first_error), /would pass 4096 bytes.*"max_ask_bytes"/);
    assert.equal(seen.asked, 5);
  } finally {
    await client.close();
  }
});

Deno.test("a context kept past its call asks nobody: refused in the sandbox and by the host, audited", async () => {
  await using ws = await tempWorkspace();
  const audit = join(ws.cache, "audit.jsonl");
  const policy = await _policy(ws, {});
  const { client, seen } = _sampler("stash");
  await client.connect(_stdio(ws, policy, audit));
  try {
    const kept = _result(await client.callTool({ name: "StashContext", arguments: {} }));
    assert.equal(kept.success, true);
    for (let i = 0; i < 5; i++) {
      const late = _result(await client.callTool({ name: "AskThroughStash", arguments: {} }));
      assert.equal(late.asked, false);
      assert.match(String(late.error), /the call has ended/);
    }
    assert.equal(seen.asked, 0, "the client was never asked");
  } finally {
    await client.close();
  }
  const refused = (await _asks(audit)).filter((l) => l.tool === "(no running call)");
  assert.equal(refused.length, 5);
  assert.ok(refused.every((l) => l.outcome === "denied" && /only possible while/.test(l.reason!)));
});

Deno.test("over HTTP, a context kept by one session's call never reaches that client nor the next session's", async () => {
  await using ws = await tempWorkspace();
  const audit = join(ws.cache, "audit.jsonl");
  const policy = await _policy(ws, {});
  await using corral = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--permissions", policy, "--audit", audit],
    ws,
    { CORRAL_TOOL_DIRS: TOOLS },
  );
  const a = _sampler("session-a");
  const b = _sampler("session-b");
  await a.client.connect(new StreamableHTTPClientTransport(new URL(corral.url)));
  await b.client.connect(new StreamableHTTPClientTransport(new URL(corral.url)));
  try {
    await a.client.callTool({ name: "StashContext", arguments: {} });
    for (let i = 0; i < 5; i++) {
      const late = _result(await b.client.callTool({ name: "AskThroughStash", arguments: {} }));
      assert.equal(late.asked, false, JSON.stringify(late));
    }
    // Each session's own questions still reach its own client, and only it.
    const own = _result(await b.client.callTool({ name: "AskFlood", arguments: { n: 2 } }));
    assert.equal(own.answered, 2);
    assert.equal(a.seen.asked, 0, "session A's client was never asked");
    assert.equal(b.seen.asked, 2, "session B's client got only its own call's questions");
  } finally {
    await a.client.close();
    await b.client.close();
  }
});

Deno.test("a question still open when its call times out is withdrawn from the client", async () => {
  await using ws = await tempWorkspace();
  const audit = join(ws.cache, "audit.jsonl");
  const policy = await _policy(ws, { timeout_ms: 1500 });
  // The first question is answered; the second hangs until withdrawn. (The SDK client ignores
  // a cancellation of request id 0, its first one: `if (!requestId) return`.)
  const { client, seen } = _sampler("withdrawn", (n) => n === 1 ? 0 : Infinity);
  await client.connect(_stdio(ws, policy, audit));
  try {
    const first = _result(await client.callTool({ name: "AskFlood", arguments: { n: 1 } }));
    assert.equal(first.answered, 1);
    const res = await client.callTool({ name: "AskFlood", arguments: { n: 1 } });
    assert.equal(res.isError, true);
    assert.match(JSON.stringify(res.content), /timed out/);
    for (let i = 0; i < 50 && seen.withdrawn === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(seen.asked, 2);
    assert.equal(seen.withdrawn, 1, "the client saw the open question cancelled");
    const next = await client.callTool({ name: "StashContext", arguments: {} });
    assert.equal(next.isError, false, "the host still answers");
  } finally {
    await client.close();
  }
});
