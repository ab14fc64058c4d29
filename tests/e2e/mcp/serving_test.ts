// Serving that holds: a token by default, bounded sessions, one bounded
// queue per instance, 429 beyond it, oversized stdio messages answered,
// and overwrites confirmed like deletions.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CORRAL_ARGS,
  INIT_BODY as INIT,
  MCP_POST_HEADERS as ACCEPT,
} from "../../../testing/mod.ts";
import { childEnv, startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

/**
 * The pid of the corral server listening at `url`: the process that holds the listening
 * socket's inode. (/proc/PID/net/tcp lists every socket of the network namespace, so it names
 * the port in every corral's list alike: a parallel test's server was taken for this one.)
 */
function _pidOf(url: string): number | undefined {
  const port = `:${Number(new URL(url).port).toString(16).toUpperCase().padStart(4, "0")}`;
  const inodes = new Set<string>();
  for (const line of Deno.readTextFileSync("/proc/net/tcp").split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(port) && f[3] === "0A") inodes.add(`socket:[${f[9]}]`);
  }
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmd = Deno.readTextFileSync(`/proc/${e.name}/cmdline`);
      if (!cmd.includes("main.ts") || !cmd.includes("mcp")) continue;
      for (const fd of Deno.readDirSync(`/proc/${e.name}/fd`)) {
        if (inodes.has(Deno.readLinkSync(`/proc/${e.name}/fd/${fd.name}`))) return Number(e.name);
      }
    } catch { /* gone */ }
  }
  return undefined;
}

function _rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
  return m ? Number(m[1]) / 1024 : NaN;
}

Deno.test("HTTP without a token: corral makes one (0600) and refuses requests without it; --no-token is loopback only", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0", "--keep-token"], ws);
  const file = join(ws.cache, "config", "mcp-token");
  assert.match(corral.stderr(), new RegExp(`bearer token written to ${file}`));
  const st = await Deno.stat(file);
  assert.equal((st.mode ?? 0) & 0o077, 0, "only the user may read the token");
  const token = (await Deno.readTextFile(file)).trim();
  const bare = await fetch(corral.url, { method: "POST", headers: ACCEPT, body: INIT });
  assert.equal(bare.status, 401);
  await bare.body?.cancel();
  const ok = await fetch(corral.url, {
    method: "POST",
    headers: { ...ACCEPT, Authorization: `Bearer ${token}` },
    body: INIT,
  });
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
  // --no-token: a warning on loopback, refused elsewhere.
  await using open = await startHttpCorral(["--http", "127.0.0.1:0"], ws);
  assert.match(open.stderr(), /Warning: serving MCP without a token/);
  const wide = await new Deno.Command(Deno.execPath(), {
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws.dir, "-r", "--http", "0.0.0.0:0", "--no-token"],
    env: childEnv(ws.cache),
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(wide.code, 2);
  assert.match(new TextDecoder().decode(wide.stderr), /--no-token is for loopback only/);
});

Deno.test("a session flood is bounded: over --max-sessions new sessions get 503", async () => {
  await using ws = await tempWorkspace();
  // Idle for longer than the flood can take on a loaded machine: none of its sessions expires.
  await using corral = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--max-sessions", "40", "--session-idle", "120"],
    ws,
  );
  const pid = _pidOf(corral.url);
  assert.ok(pid, `no process holds the socket of ${corral.url}`);
  const before = _rssMb(pid);
  const statuses: number[] = [];
  for (let i = 0; i < 400; i++) {
    const r = await fetch(corral.url, { method: "POST", headers: ACCEPT, body: INIT });
    statuses.push(r.status);
    await r.body?.cancel();
  }
  assert.equal(statuses.filter((s) => s === 200).length, 40);
  assert.equal(statuses.filter((s) => s === 503).length, 360);
  const after = _rssMb(pid);
  assert.ok(after - before < 60, `RSS grew ${before} → ${after} MB`);
});

Deno.test("sessions idle past --session-idle expire, and their room is taken again", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--max-sessions", "2", "--session-idle", "2"],
    ws,
  );
  const open = async () => {
    const r = await fetch(corral.url, { method: "POST", headers: ACCEPT, body: INIT });
    await r.body?.cancel();
    return r.status;
  };
  assert.deepEqual([await open(), await open(), await open()], [200, 200, 503]);
  await new Promise((r) => setTimeout(r, 3500));
  assert.deepEqual([await open(), await open(), await open()], [200, 200, 503]);
});

async function _callMany(url: string, clients: number, calls: number) {
  const results = await Promise.all(
    Array.from({ length: clients }, async () => {
      const client = new Client({ name: "load", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      const out = [];
      for (let i = 0; i < calls; i++) {
        out.push(
          await client.callTool({ name: "WordCount", arguments: { filepath: "notes.txt" } }),
        );
      }
      await client.close();
      return out;
    }),
  );
  return results.flat();
}

Deno.test("50 concurrent clients are all served under the default limits (stateless and stateful)", async () => {
  await using ws = await tempWorkspace();
  for (const mode of [["--stateless"], []]) {
    await using corral = await startHttpCorral(["--http", "127.0.0.1:0", ...mode], ws);
    const results = await _callMany(corral.url, 50, 2);
    assert.equal(results.length, 100);
    const refused = results.filter((r) => r.isError);
    assert.equal(refused.length, 0, JSON.stringify(refused[0]));
  }
});

Deno.test("beyond the queue, a stateless server answers 429 with Retry-After; a session gets a tool error", async () => {
  await using ws = await tempWorkspace();
  const call = (id: number, ms: number) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "E2eSleep", arguments: { ms } },
    });
  await using corral = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--stateless", "--max-concurrent", "1", "--max-queue", "1"],
    ws,
  );
  const post = (body: string) => fetch(corral.url, { method: "POST", headers: ACCEPT, body });
  const first = post(call(1, 1500));
  await new Promise((r) => setTimeout(r, 300));
  const second = post(call(2, 10));
  await new Promise((r) => setTimeout(r, 100));
  const third = await post(call(3, 10));
  assert.equal(third.status, 429);
  assert.equal(third.headers.get("retry-after"), "1");
  await third.body?.cancel();
  for (const r of await Promise.all([first, second])) {
    assert.equal(r.status, 200);
    assert.match(await r.text(), /"slept"/);
  }
  // In a session: the third call at once gets a clear tool error, the others run.
  await using session = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--max-concurrent", "1", "--max-queue", "1"],
    ws,
  );
  const client = new Client({ name: "busy", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(session.url)));
  try {
    const sleep = (ms: number) => client.callTool({ name: "E2eSleep", arguments: { ms } });
    const a = sleep(1500);
    await new Promise((r) => setTimeout(r, 300));
    const b = sleep(10);
    await new Promise((r) => setTimeout(r, 100));
    const c = await sleep(10);
    assert.equal(c.isError, true);
    assert.match(JSON.stringify(c.content), /too busy: 1 calls running and 1 waiting/);
    for (const r of await Promise.all([a, b])) assert.notEqual(r.isError, true);
  } finally {
    await client.close();
  }
});

Deno.test("a 12 MB message on stdio gets a JSON-RPC error and the next request is answered", async () => {
  await using ws = await tempWorkspace();
  const child = new Deno.Command(Deno.execPath(), {
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws.dir, "-r"],
    env: childEnv(ws.cache),
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const w = child.stdin.getWriter();
  const enc = new TextEncoder();
  const send = (m: unknown) => w.write(enc.encode(JSON.stringify(m) + "\n"));
  await w.write(enc.encode(INIT + "\n"));
  await send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await send({
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "WordCount", arguments: { filepath: "x".repeat(12_000_000) } },
  });
  await send({ jsonrpc: "2.0", id: 3, method: "ping" });
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const deadline = Date.now() + 20_000;
  while (!/"id":3/.test(text) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  await w.close();
  await reader.cancel();
  await child.status;
  assert.match(text, /"id":2,"error":\{"code":-32600,"message":"Request too large: 12000\d+ bytes/);
  assert.match(text, /"result":\{\},"jsonrpc":"2\.0","id":3/);
});

Deno.test("an overwrite by CreateFile or MoveFile needs confirmation, like DeleteFile", async () => {
  const { ws } = await tempLayout();
  await Deno.writeTextFile(`${ws}/keep.txt`, "precious");
  await Deno.writeTextFile(`${ws}/other.txt`, "other");
  for (
    const [tool, args] of [
      ["CreateFile", { filepath: "keep.txt", content: "gone", overwrite: true }],
      ["MoveFile", { source: "other.txt", destination: "keep.txt", overwrite: true }],
    ] as const
  ) {
    const res = await runCli(["call", tool, "--workspace", ws, "--args", JSON.stringify(args)]);
    assert.equal(res.code, 1, res.stderr);
    assert.match(res.stdout, /needs confirmation: approve it \(corral call --yes\)/);
    assert.equal(await Deno.readTextFile(`${ws}/keep.txt`), "precious");
  }
  // Without overwrite no confirmation is asked; with --yes the overwrite runs.
  const plain = await runCli([
    "call",
    "CreateFile",
    "--workspace",
    ws,
    "--args",
    JSON.stringify({ filepath: "new.txt", content: "n" }),
  ]);
  assert.equal(plain.code, 0, plain.stdout + plain.stderr);
  const yes = await runCli([
    "call",
    "CreateFile",
    "--yes",
    "--workspace",
    ws,
    "--args",
    JSON.stringify({ filepath: "keep.txt", content: "replaced", overwrite: true }),
  ]);
  assert.equal(yes.code, 0, yes.stdout + yes.stderr);
  assert.equal(await Deno.readTextFile(`${ws}/keep.txt`), "replaced");
});

Deno.test("a burst of concurrent initializations cannot overrun --max-sessions, and a full gate answers 429 without reading the body", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0", "--max-sessions", "5"], ws);
  const statuses = await Promise.all(
    Array.from({ length: 60 }, async () => {
      const r = await fetch(corral.url, { method: "POST", headers: ACCEPT, body: INIT });
      await r.body?.cancel();
      return r.status;
    }),
  );
  assert.ok(statuses.filter((s) => s === 200).length <= 5, JSON.stringify(statuses));
  // A full gate: a chunked body (no Content-Length) is answered 429 unread.
  await using busy = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--stateless", "--max-concurrent", "1", "--max-queue", "1"],
    ws,
  );
  const call = (id: number) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "E2eSleep", arguments: { ms: 1500 } },
    });
  const a = fetch(busy.url, { method: "POST", headers: ACCEPT, body: call(1) });
  await new Promise((r) => setTimeout(r, 300));
  const b = fetch(busy.url, { method: "POST", headers: ACCEPT, body: call(2) });
  await new Promise((r) => setTimeout(r, 100));
  const chunk = new TextEncoder().encode(" ".repeat(64 * 1024));
  let sent = 0;
  const chunked = new ReadableStream<Uint8Array>({
    pull(ctrl) {
      if (sent++ < 32) ctrl.enqueue(chunk);
      else ctrl.close();
    },
  });
  const c = await fetch(busy.url, {
    method: "POST",
    headers: ACCEPT,
    body: chunked,
    // @ts-ignore: Deno's fetch takes a streaming body with duplex "half"
    duplex: "half",
  });
  assert.equal(c.status, 429);
  await c.body?.cancel();
  for (const r of await Promise.all([a, b])) await r.body?.cancel();
});
