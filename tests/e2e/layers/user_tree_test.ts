// The user's tree is the user's (issue 27): through a real `corral mcp`, over stdio and HTTP,
// with real git, `git status --porcelain` shows only the file the tool wrote: during the
// session, after every way the session ends (stdin closed, SIGTERM, SIGINT), and after a
// SIGKILL and the next start. corral itself leaves nothing there, in a repository or not.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CORRAL_ARGS, ROOT } from "../../../testing/mod.ts";
import { childEnv, startHttpCorral, textOf } from "../../_mcp_helpers.ts";

async function _git(cwd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", {
    args: ["-c", "user.name=User", "-c", "user.email=u@example.com", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { GIT_CONFIG_NOSYSTEM: "1" },
  }).output();
  return new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
}

/** A workspace (a git repository with one commit, or a plain folder) and a private cache. */
async function _workspace(repo: boolean) {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_tree_" }));
  const cache = await Deno.makeTempDir({ prefix: "corral_tree_cache_" });
  await Deno.writeTextFile(join(dir, "notes.txt"), "one two three\n");
  if (repo) {
    await _git(dir, "init", "-q");
    await _git(dir, "add", "notes.txt");
    await _git(dir, "commit", "-q", "-m", "init");
  }
  return {
    dir,
    cache,
    async [Symbol.asyncDispose]() {
      await Deno.remove(dir, { recursive: true });
      await new Deno.Command("rm", { args: ["-rf", cache] }).output();
    },
  };
}

/** Every entry of `dir` but `.git` (for a folder that is no repository), sorted. */
async function _entries(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
}

/** What the user sees: porcelain status in a repository, the entries otherwise. */
async function _seen(ws: { dir: string }, repo: boolean): Promise<string[]> {
  if (!repo) return await _entries(ws.dir);
  return (await _git(ws.dir, "status", "--porcelain", "--untracked-files=all"))
    .split("\n").filter(Boolean).sort();
}

/** A raw MCP client over a `corral mcp` child's stdio. */
function _stdioCorral(ws: { dir: string; cache: string }) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws.dir, "-r", "-w", "-x"],
    env: childEnv(ws.cache),
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stderr = new Response(child.stderr).text();
  let buf = "";
  const send = (msg: unknown) => writer.write(new TextEncoder().encode(JSON.stringify(msg) + "\n"));
  const answer = async (id: number) => {
    for (;;) {
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const msg = JSON.parse(line);
        if (msg.id === id) return msg;
      }
      const { value, done } = await lines.read();
      if (done) throw new Error(`corral ended: ${await stderr}`);
      buf += value;
    }
  };
  let id = 1;
  return {
    child,
    async init() {
      await send({
        jsonrpc: "2.0",
        id: id,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "t", version: "1" },
        },
      });
      await answer(id++);
      await send({ jsonrpc: "2.0", method: "notifications/initialized" });
    },
    async call(name: string, args: Record<string, unknown>) {
      const n = id++;
      await send({
        jsonrpc: "2.0",
        id: n,
        method: "tools/call",
        params: { name, arguments: args },
      });
      return (await answer(n)).result;
    },
    async closeStdin() {
      await writer.close();
    },
    async ended() {
      lines.cancel().catch(() => {});
      return { status: await child.status, stderr: await stderr };
    },
  };
}

const _WRITE = { code: "echo from-the-tool > tool.txt && ls -A | wc -l" };

for (const repo of [true, false]) {
  const where = repo ? "a git repository" : "a folder that is no repository";
  for (const end of ["stdin closed", "SIGTERM", "SIGINT", "SIGKILL and the next start"] as const) {
    Deno.test(`stdio in ${where}: only the tool's file, during the session and after ${end}`, async () => {
      await using ws = await _workspace(repo);
      const before = await _seen(ws, repo);
      const corral = _stdioCorral(ws);
      await corral.init();
      const r = await corral.call("RunBashCode", _WRITE);
      assert.equal(r.isError, false, JSON.stringify(r));
      // A file tool too: its own sandbox, another layer over the same tree.
      const c = await corral.call("CreateFile", { filepath: "made.txt", content: "x\n" });
      assert.equal(c.isError, false, JSON.stringify(c));
      const mine = repo
        ? ["?? made.txt", "?? tool.txt"]
        : [...before, "made.txt", "tool.txt"].sort();
      assert.deepEqual(await _seen(ws, repo), mine, "during the session");
      if (end === "stdin closed") await corral.closeStdin();
      else if (end === "SIGTERM") corral.child.kill("SIGTERM");
      else if (end === "SIGINT") corral.child.kill("SIGINT");
      else corral.child.kill("SIGKILL");
      await corral.ended();
      assert.deepEqual(await _seen(ws, repo), mine, `after ${end}`);
      if (end === "SIGKILL and the next start") {
        const next = _stdioCorral(ws);
        await next.init();
        const again = await next.call("RunBashCode", { code: "cat tool.txt" });
        assert.match(textOf(again), /from-the-tool/);
        await next.closeStdin();
        await next.ended();
        assert.deepEqual(await _seen(ws, repo), mine, "after the next start");
      }
      assert.equal(await Deno.readTextFile(join(ws.dir, "tool.txt")), "from-the-tool\n");
    });
  }
}

for (
  const end of ["a deleted session and SIGTERM", "SIGINT", "SIGKILL and the next start"] as const
) {
  Deno.test(`HTTP: only the tool's file, during the session and after ${end}`, async () => {
    await using ws = await _workspace(true);
    const corral = await startHttpCorral(["--http", "127.0.0.1:0", "-x"], ws);
    const transport = new StreamableHTTPClientTransport(new URL(corral.url));
    const client = new Client({ name: "tree", version: "1" });
    await client.connect(transport);
    const r = await client.callTool({ name: "RunBashCode", arguments: _WRITE });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.deepEqual(await _seen(ws, true), ["?? tool.txt"], "during the session");
    if (end === "a deleted session and SIGTERM") {
      await transport.terminateSession();
      assert.deepEqual(await _seen(ws, true), ["?? tool.txt"], "after the session's end");
      await corral[Symbol.asyncDispose]();
    } else if (end === "SIGINT") {
      Deno.kill(corral.pid, "SIGINT");
      await corral[Symbol.asyncDispose]();
    } else {
      await corral.kill();
    }
    await client.close().catch(() => {});
    assert.deepEqual(await _seen(ws, true), ["?? tool.txt"], `after ${end}`);
    if (end === "SIGKILL and the next start") {
      await using next = await startHttpCorral(["--http", "127.0.0.1:0", "-x"], ws);
      const c2 = new Client({ name: "tree2", version: "1" });
      await c2.connect(new StreamableHTTPClientTransport(new URL(next.url)));
      const again = await c2.callTool({ name: "RunBashCode", arguments: { code: "cat tool.txt" } });
      assert.match(textOf(again), /from-the-tool/);
      await c2.close();
      assert.deepEqual(await _seen(ws, true), ["?? tool.txt"], "after the next start");
    }
  });
}
