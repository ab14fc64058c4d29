// A user's second week (issue 31), the parts that meet other programs: the installed command,
// an MCP client's config, hosted servers. Driven from the outside, as a user types it.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { connectWithToken, FIXTURES, fixtureServer, ROOT } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";
import { startHttpCorral, textOf } from "../../_mcp_helpers.ts";

const _dec = new TextDecoder();

async function _home() {
  const l = await tempLayout();
  const config = join(l.base, "config");
  await Deno.mkdir(config);
  return { ...l, config, env: { CORRAL_CONFIG_DIR: config } };
}

Deno.test("item 5: the installed command runs with no deno on PATH, and its first call downloads nothing", async () => {
  const h = await _home();
  const root = join(h.base, "install");
  // A Deno cache of its own: what the command needs is fetched by the install, not later.
  const env = {
    DENO_INSTALL_ROOT: root,
    DENO_DIR: join(h.base, "deno-dir"),
    HOME: h.base,
    CORRAL_CONFIG_DIR: h.config,
    CORRAL_CACHE_DIR: join(h.base, "cache"),
    NO_COLOR: "1",
  };
  const installed = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--config", join(ROOT, "deno.json"), "install"],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = _dec.decode(installed.stdout) + _dec.decode(installed.stderr);
  assert.equal(installed.code, 0, out);
  assert.match(out, new RegExp(`it runs ${Deno.execPath()}`));
  const command = join(root, "bin", "corral");
  assert.match(
    await Deno.readTextFile(command),
    new RegExp(`^exec '${Deno.execPath()}' run `, "m"),
  );
  await Deno.writeTextFile(join(h.ws, "a.txt"), "one two\n");
  const run = await new Deno.Command(command, {
    args: ["-r", "call", "WordCount", "--args", '{"filepath":"a.txt"}'],
    cwd: h.ws,
    clearEnv: true,
    env: { ...env, PATH: "" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = _dec.decode(run.stderr);
  assert.equal(run.code, 0, stderr);
  assert.equal(JSON.parse(_dec.decode(run.stdout)).words, 2);
  assert.doesNotMatch(stderr, /Download/);
  assert.doesNotMatch(stderr, /not found/);
  await Deno.remove(h.base, { recursive: true });
});

Deno.test("item 6: corral mcp --client-config, launched by an SDK client from another folder with an empty PATH", async () => {
  const h = await _home();
  await Deno.writeTextFile(join(h.ws, "a.txt"), "one two three\n");
  const printed = await runCli(
    ["mcp", "--client-config", "-r", "--workspace", h.ws],
    { env: h.env },
  );
  assert.equal(printed.code, 0, printed.stderr);
  const entry = JSON.parse(printed.stdout).mcpServers.corral;
  assert.equal(entry.command, Deno.execPath());
  for (const arg of entry.args) assert.ok(!/^\.\.?\//.test(arg), `no relative path: ${arg}`);
  assert.ok(entry.args.includes(join(ROOT, "main.ts")));
  assert.equal(entry.env.CORRAL_CONFIG_DIR, h.config);
  const other = await Deno.makeTempDir({ prefix: "corral_gui_app_" });
  const client = new Client({ name: "gui-app", version: "1" });
  await client.connect(
    new StdioClientTransport({
      command: entry.command,
      args: entry.args,
      env: { ...entry.env, PATH: "", CORRAL_CACHE_DIR: "" },
      cwd: other,
      stderr: "pipe",
    }),
  );
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes("WordCount"), names.join());
    const r = await client.callTool({ name: "WordCount", arguments: { filepath: "a.txt" } });
    assert.equal((r.structuredContent as { words: number }).words, 3, textOf(r));
  } finally {
    await client.close();
    await Deno.remove(other, { recursive: true });
  }
  await Deno.remove(h.base, { recursive: true });
});

Deno.test("item 6: over HTTP the entry names the URL and the token's file, the token only when asked", async () => {
  const h = await _home();
  const ws = { dir: h.ws, cache: join(h.base, "cache"), [Symbol.asyncDispose]: async () => {} };
  await Deno.mkdir(ws.cache);
  await using server = await startHttpCorral(["--http", "127.0.0.1:0", "--keep-token"], ws, {
    CORRAL_CONFIG_DIR: h.config,
  });
  const printed = await runCli(
    ["mcp", "--client-config", "--http", server.url],
    { env: h.env },
  );
  assert.equal(printed.code, 0, printed.stderr);
  const entry = JSON.parse(printed.stdout).mcpServers.corral;
  assert.equal(entry.type, "http");
  assert.equal(entry.url, server.url);
  assert.equal(entry.headers.Authorization, "Bearer ${CORRAL_MCP_TOKEN}");
  const file = join(h.config, "mcp-token");
  assert.match(
    printed.stderr,
    new RegExp(`the server running at ${server.url} .*takes the token in ${file}`),
  );
  const token = (await Deno.readTextFile(file)).trim();
  assert.ok(!printed.stdout.includes(token) && !printed.stderr.includes(token));
  const shown = await runCli(
    ["mcp", "--client-config", "--http", server.url, "--show-token"],
    { env: h.env },
  );
  assert.equal(JSON.parse(shown.stdout).mcpServers.corral.headers.Authorization, `Bearer ${token}`);
  const client = await connectWithToken(entry.url, token, "http-app");
  try {
    assert.ok((await client.listTools()).tools.some((t) => t.name === "ReadFile"));
  } finally {
    await client.close();
  }
  await Deno.remove(h.base, { recursive: true });
});

/** corral.json and permissions.json hosting the tiny server, with `deny`. */
async function _tinyServer(dir: string, deny: string[]): Promise<string[]> {
  const server = join(FIXTURES, "second_week", "tiny_server.ts");
  await Deno.writeTextFile(
    join(dir, "c.json"),
    JSON.stringify({
      servers: {
        tiny: {
          command: fixtureServer(server),
          tools: { deny },
        },
      },
    }),
  );
  await Deno.writeTextFile(join(dir, "p.json"), '{"servers": {"tiny": {"read": ["."]}}}');
  return ["--config", join(dir, "c.json"), "--permissions", join(dir, "p.json")];
}

Deno.test("item 9: servers install counts only the tools it offers; a failure's text blocks hide host paths as its error", async () => {
  const h = await _home();
  const files = await _tinyServer(h.base, ["wipe"]);
  const env = { ...h.env, CORRAL_SERVERS_DIR: join(h.base, "servers") };
  const installed = await runCli(["servers", "install", ...files, "--workspace", h.ws], { env });
  assert.equal(installed.code, 0, installed.stdout + installed.stderr);
  assert.match(installed.stdout, /^tiny: approved 2 tools: note, fail_path$/m);
  assert.match(
    installed.stdout,
    /not offered \(servers\.tiny\.tools allow\/deny in corral\.json\): wipe/,
  );
  const listed = await runCli(["servers", "--json", ...files, "--workspace", h.ws], { env });
  assert.equal(JSON.parse(listed.stdout)[0].approved, 2);
  const failed = await runCli(
    ["-r", "call", "fail_path", "--yes", ...files, "--workspace", h.ws],
    { env },
  );
  assert.equal(failed.code, 1, failed.stdout + failed.stderr);
  const result = JSON.parse(failed.stdout);
  assert.doesNotMatch(failed.stdout, /corral-host-only/);
  assert.match(result.error, /cannot open …\/data\.bin/);
  assert.equal(result.content_blocks[0].text, "cannot open …/data.bin");
  await Deno.remove(h.base, { recursive: true });
});

Deno.test("item 2: a wrong server version is a clean error: no backtrace, no escapes", async () => {
  const h = await _home();
  await Deno.writeTextFile(
    join(h.base, "c.json"),
    '{"servers": {"fs": {"npm": "@modelcontextprotocol/server-filesystem@9.9.9"}}}',
  );
  const run = await runCli(
    ["servers", "install", "--config", join(h.base, "c.json"), "--workspace", h.ws],
    {
      // As on this machine: a Rust backtrace is asked for; corral's children must not give one.
      env: { ...h.env, RUST_BACKTRACE: "1", CORRAL_SERVERS_DIR: join(h.base, "servers") },
    },
  );
  const out = run.stdout + run.stderr;
  assert.equal(run.code, 1, out);
  assert.match(
    run.stdout,
    /fs: Cannot install server "fs" \(npm:@modelcontextprotocol\/server-filesystem@9\.9\.9\): .*deno cache failed: error: Could not find npm package '@modelcontextprotocol\/server-filesystem' matching '9\.9\.9'/,
  );
  assert.doesNotMatch(out, /Stack backtrace|<unknown>|Download/);
  assert.ok(!out.includes("\x1b"), "no terminal escape");
  await Deno.remove(h.base, { recursive: true });
});
