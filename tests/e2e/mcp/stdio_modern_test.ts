/**
 * 2026-07-28 on stdio, raw: a connection that opens with a request naming
 * the revision in `_meta` is answered with `server/discover`, input-required
 * rounds whose state corral signs (a tampered one refused, the call not
 * run), and refuses a 2025-era `initialize` on it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { CORRAL_ARGS, ROOT } from "../../../testing/mod.ts";
import { childEnv, tempWorkspace } from "../../_mcp_helpers.ts";

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
};

type Msg = Record<string, unknown>;

Deno.test("stdio at 2026-07-28: discover, a signed round (tampered state refused), 2025 initialize refused", async () => {
  await using ws = await tempWorkspace();
  const child = new Deno.Command(Deno.execPath(), {
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws.dir, "-r", "-w"],
    env: { ...childEnv(ws.cache), CORRAL_TOOL_DIRS: join(ROOT, "tests/fixtures/mcp_conformance") },
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const send = (id: number, method: string, params: Msg = {}) =>
    writer.write(
      new TextEncoder().encode(
        JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: META } }) + "\n",
      ),
    );
  const answer = async (id: number): Promise<Msg> => {
    for (;;) {
      const nl = buffer.indexOf("\n");
      if (nl >= 0) {
        const m = JSON.parse(buffer.slice(0, nl)) as Msg;
        buffer = buffer.slice(nl + 1);
        if (m.id === id) return m;
        continue;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error(`stdout ended before the answer to ${id}`);
      buffer += value;
    }
  };
  try {
    await send(1, "server/discover");
    const discover = (await answer(1)).result as { supportedVersions: string[] };
    assert.ok(discover.supportedVersions.includes("2026-07-28"), JSON.stringify(discover));
    await Deno.writeTextFile(join(ws.dir, "keep.txt"), "keep");
    const del = { name: "DeleteFile", arguments: { filepath: "keep.txt" } };
    await send(2, "tools/call", del);
    const round = (await answer(2)).result as Msg;
    assert.equal(round.resultType, "input_required", JSON.stringify(round));
    const [key] = Object.keys(round.inputRequests as Msg);
    const yes = { [key]: { action: "accept", content: { approve: true } } };
    await send(3, "tools/call", {
      ...del,
      inputResponses: yes,
      requestState: `${round.requestState}x`,
    });
    const tampered = await answer(3);
    assert.equal((tampered.error as { code: number })?.code, -32602, JSON.stringify(tampered));
    assert.equal(await Deno.readTextFile(join(ws.dir, "keep.txt")), "keep", "nothing ran");
    await send(4, "tools/call", { ...del, inputResponses: yes, requestState: round.requestState });
    const done = (await answer(4)).result as Msg;
    assert.equal(done.isError, false, JSON.stringify(done));
    await assert.rejects(Deno.stat(join(ws.dir, "keep.txt")), Deno.errors.NotFound);
    // A 2025-era opening on this connection is refused.
    await writer.write(
      new TextEncoder().encode(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 5,
          method: "initialize",
          params: {
            protocolVersion: "2025-11-25",
            capabilities: {},
            clientInfo: { name: "x", version: "1" },
          },
        }) + "\n",
      ),
    );
    assert.ok((await answer(5)).error, "initialize refused on a 2026-07-28 connection");
  } finally {
    await writer.close();
    await reader.cancel();
    await child.status;
  }
});

Deno.test("stdio at 2026-07-28: subscriptions/listen with taskIds acknowledges the connection's own tasks and streams notifications/tasks", async () => {
  await using ws = await tempWorkspace();
  const child = new Deno.Command(Deno.execPath(), {
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws.dir, "-r", "-w"],
    env: { ...childEnv(ws.cache), CORRAL_TOOL_DIRS: join(ROOT, "tests/fixtures/mcp_conformance") },
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const meta = {
    ...META,
    "io.modelcontextprotocol/clientCapabilities": {
      extensions: { "io.modelcontextprotocol/tasks": {} },
    },
  };
  const writer = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const send = (id: number, method: string, params: Msg = {}) =>
    writer.write(
      new TextEncoder().encode(
        JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: meta } }) + "\n",
      ),
    );
  const seen: Msg[] = [];
  const next = async (until: (m: Msg) => boolean): Promise<Msg> => {
    for (;;) {
      const nl = buffer.indexOf("\n");
      if (nl >= 0) {
        const m = JSON.parse(buffer.slice(0, nl)) as Msg;
        buffer = buffer.slice(nl + 1);
        seen.push(m);
        if (until(m)) return m;
        continue;
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, no) =>
        timer = setTimeout(
          () => no(new Error(`no answer in 30 s: ${JSON.stringify(seen)}`)),
          30_000,
        )
      );
      const { value, done } = await Promise.race([reader.read(), late]).finally(() =>
        clearTimeout(timer)
      );
      if (done) throw new Error(`stdout ended: ${JSON.stringify(seen)}`);
      buffer += value;
    }
  };
  try {
    await send(1, "tools/call", { name: "slow_compute", arguments: { seconds: 2, label: "t" } });
    const made = (await next((m) => m.id === 1)).result as Msg;
    assert.equal(made.resultType, "task", JSON.stringify(made));
    const taskId = made.taskId as string;
    await send(2, "subscriptions/listen", {
      notifications: { toolsListChanged: true, taskIds: [taskId, "another-connections-task"] },
    });
    const ack = (await next((m) => m.method === "notifications/subscriptions/acknowledged"))
      .params as Record<string, Msg>;
    assert.deepEqual(ack.notifications, { toolsListChanged: true, taskIds: [taskId] });
    assert.equal(ack._meta["io.modelcontextprotocol/subscriptionId"], 2);
    const first = (await next((m) => m.method === "notifications/tasks")).params as Msg;
    assert.equal(first.taskId, taskId);
    assert.equal(first.status, "working", JSON.stringify(first));
    const last = (await next((m) =>
      m.method === "notifications/tasks" && (m.params as Msg).status !== "working"
    )).params as Msg;
    assert.equal(last.status, "completed", JSON.stringify(last));
    assert.match(JSON.stringify(last.result), /computed t after 2s/);
    assert.equal((last._meta as Msg)["io.modelcontextprotocol/subscriptionId"], 2);
  } finally {
    await writer.close();
    await reader.cancel();
    await child.status;
  }
});
