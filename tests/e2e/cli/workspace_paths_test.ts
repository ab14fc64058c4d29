// A user's first week (issue 23), driven from the outside: the CLI run as a user runs it.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { denoDir } from "../../../core/base/mod.ts";
import { HOST_PERMISSION_FLAGS } from "../../../core/sandbox/host_flags.ts";
import { CORRAL_ARGS, ROOT } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";
import { childEnv, startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";

const _dec = new TextDecoder();

/** Run a command line in `cwd` with `env` added; stdout and stderr as text. */
async function _sh(
  cmd: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<{ code: number; stdout: string; stderr: string }> {
  // A user's shell has no INIT_CWD: the one `deno task test` set (corral's folder) stays out,
  // or a child `deno task` would keep it (Deno keeps an INIT_CWD that is already set).
  const { INIT_CWD: _, ...inherited } = Deno.env.toObject();
  const out = await new Deno.Command(cmd, {
    args,
    cwd: options.cwd,
    clearEnv: true,
    env: { ...inherited, NO_COLOR: "1", CORRAL_CACHE_DIR: "", ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: _dec.decode(out.stdout), stderr: _dec.decode(out.stderr) };
}

async function _exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("item 7: under deno task, --audit, --permissions and --workspace resolve where the user typed them", async () => {
  const { base, ws } = await tempLayout();
  await Deno.writeTextFile(`${ws}/a.txt`, "one two three\n");
  await Deno.writeTextFile(`${ws}/mypol.json`, `{ "toolsets": { "files": { "read": ["."] } } }`);
  const env = { CORRAL_CONFIG_DIR: `${base}/config` };
  const task = ["task", "-q", "--config", join(ROOT, "deno.json"), "corral"];
  const res = await _sh(Deno.execPath(), [
    ...task,
    "-r",
    "--audit",
    "logs/audit.jsonl",
    "--permissions",
    "mypol.json",
    "--workspace",
    ".",
    "call",
    "WordCount",
    "--args",
    '{"filepath":"a.txt"}',
  ], { cwd: ws, env });
  assert.equal(res.code, 0, res.stderr);
  assert.equal(JSON.parse(res.stdout).words, 3);
  const line = JSON.parse((await Deno.readTextFile(`${ws}/logs/audit.jsonl`)).trim());
  assert.equal(line.tool, "WordCount");
  assert.equal(
    await _exists(join(ROOT, "logs", "audit.jsonl")),
    false,
    "nothing in corral's folder",
  );
  // A relative --permissions that does not exist is named where the user typed it.
  const missing = await _sh(
    Deno.execPath(),
    [...task, "-r", "--permissions", "nope.json", "list"],
    {
      cwd: ws,
      env,
    },
  );
  assert.equal(missing.code, 2);
  assert.ok(missing.stderr.includes(`${ws}/nope.json`), missing.stderr);
  assert.ok(!missing.stderr.includes(`${ROOT}nope.json`), missing.stderr);
});

Deno.test("item 8: corral started through a symlink to its folder still refuses that folder as a workspace", async () => {
  const { base } = await tempLayout();
  const link = `${base}/corral-link`;
  await Deno.symlink(ROOT.replace(/\/$/, ""), link);
  // Run from the link: the own folder is seen through the link, so a scratch workspace stands in.
  const res = await _sh(Deno.execPath(), [
    "run",
    ...HOST_PERMISSION_FLAGS,
    `${link}/main.ts`,
    "-r",
    "list",
    "--json",
  ], { cwd: link, env: { CORRAL_CONFIG_DIR: `${base}/config` } });
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stderr, /corral's own folder is never a workspace; using an empty scratch/);
  const named = await _sh(Deno.execPath(), [
    "run",
    ...HOST_PERMISSION_FLAGS,
    `${link}/main.ts`,
    "-r",
    "--workspace",
    link,
    "list",
  ], { cwd: base, env: { CORRAL_CONFIG_DIR: `${base}/config` } });
  assert.equal(named.code, 2, named.stderr);
  assert.match(named.stderr, /corral's own folder/);
});

Deno.test("item 8: scratch workspaces are removed when the command ends", async () => {
  const res = await runCli(["-r", "list"], { cwd: ROOT });
  assert.equal(res.code, 0, res.stderr);
  const scratch = /empty scratch workspace (\S+)/.exec(res.stderr)?.[1];
  assert.ok(scratch, res.stderr);
  assert.equal(await _exists(scratch), false, `${scratch} is left behind`);
});

Deno.test("item 8: without bwrap, skipped tools do not claim an opt-out; item 6: -r gives the missing letter as the reason", async () => {
  // No bwrap, bash or python3 on PATH (deno is started by its full path).
  const res = await runCli(["-r", "list"], { env: { PATH: "/nonexistent" } });
  assert.equal(res.code, 0, res.stderr);
  assert.match(
    res.stdout,
    /ReadFile .* skipped: needs the sandbox namespace, but no working bwrap/,
  );
  assert.doesNotMatch(res.stdout, /opted out/);
  const json = await runCli(["-r", "list", "--json"]);
  const tools = JSON.parse(json.stdout) as Array<{ name: string; reason: string | null }>;
  for (const name of ["RunBashCode", "RunPythonCode"]) {
    const t = tools.find((t) => t.name === name)!;
    assert.match(t.reason!, /^needs (w|x) \(/, `${name}: ${t.reason}`);
  }
});

Deno.test("item 8: an oversized chunked body gets 413 and the TCP connection is closed", async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0", "--max-body", "1000"], ws);
  const { hostname, port } = new URL(corral.url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const enc = new TextEncoder();
  await conn.write(enc.encode(
    `POST /mcp HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n` +
      `Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n`,
  ));
  const chunk = "x".repeat(4000);
  // Keep sending, as a client streaming a large body does, until the server hangs up.
  const sending = (async () => {
    for (let i = 0; i < 200; i++) {
      await conn.write(enc.encode(`${chunk.length.toString(16)}\r\n${chunk}\r\n`));
      await new Promise((r) => setTimeout(r, 20));
    }
  })().catch(() => "stopped");
  let text = "";
  let closed = false;
  const buf = new Uint8Array(65536);
  const deadline = setTimeout(() => conn.close(), 10_000);
  try {
    while (true) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += _dec.decode(buf.subarray(0, n));
    }
    closed = true;
  } catch (err) {
    closed = !(err instanceof Deno.errors.BadResource); // reset by the server, not our deadline
  } finally {
    clearTimeout(deadline);
  }
  assert.match(text, /^HTTP\/1\.1 413/);
  assert.ok(closed, "the server closed the connection");
  assert.equal(await sending, "stopped", "the client could not keep sending");
  try {
    conn.close();
  } catch { /* closed */ }
});

Deno.test("item 9: refusals name the rule and what the operator would change", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(`${base}/outside/secret.txt`, "canary");
  const read = await runCli([
    "-r",
    "call",
    "ReadFile",
    "--args",
    JSON.stringify({ filepath: `${base}/outside/secret.txt` }),
  ], { cwd: ws });
  assert.equal(read.code, 1);
  const readError = JSON.parse(read.stdout).error as string;
  assert.match(readError, /outside the folders this tool may use/);
  assert.match(readError, /"read"\/"write" paths of toolsets\.files of \S*permissions\.json/);
  assert.match(readError, /the operator would add the folder there/);
  assert.doesNotMatch(readError, /canary/);
  await Deno.writeTextFile(
    `${base}/pol.json`,
    JSON.stringify({ toolsets: { net: { net: ["no-such-host.invalid"] } } }),
  );
  const net = await runCli([
    "-n",
    "--toolset",
    "net",
    "--permissions",
    `${base}/pol.json`,
    "call",
    "GetUrl",
    "--args",
    '{"url":"http://example.org/"}',
  ], { cwd: ws });
  assert.equal(net.code, 1);
  const netError = JSON.parse(net.stdout).error as string;
  assert.match(netError, /no network access to example\.org/);
  assert.match(
    netError,
    /"net" list of toolsets\.net of …\/pol\.json; the operator would add/,
  );
  // A command the policy does not grant, and a confirmation that is missing: the rule, and the
  // operator's change.
  await Deno.writeTextFile(`${ws}/gone.txt`, "x");
  await Deno.writeTextFile(
    `${base}/pol2.json`,
    JSON.stringify({
      toolsets: {
        files: { read: ["."], write: ["."] },
        system: { run: ["bash"], read: ["."], write: ["."] },
      },
    }),
  );
  const cmd = await runCli([
    "-rwx",
    "--permissions",
    `${base}/pol2.json`,
    "call",
    "RunPythonCode",
    "--args",
    '{"code":"print(1)"}',
  ], { cwd: ws });
  assert.equal(cmd.code, 1, cmd.stderr);
  assert.match(
    JSON.parse(cmd.stdout).error,
    /needs x \(run\) for python3: toolsets\.system\.run in …\/pol2\.json does not list it/,
  );
  const del = await runCli([
    "-rw",
    "--permissions",
    `${base}/pol2.json`,
    "call",
    "DeleteFile",
    "--args",
    '{"filepath":"gone.txt"}',
  ], { cwd: ws });
  assert.equal(del.code, 1);
  assert.match(JSON.parse(del.stdout).error, /needs confirmation: .*tools\.DeleteFile\.confirm/);
  assert.ok(await _exists(`${ws}/gone.txt`));
  // item 6: over https, the proxy's own reason reaches the caller.
  const https = await runCli([
    "-n",
    "--toolset",
    "net",
    "--permissions",
    `${base}/pol.json`,
    "call",
    "GetUrl",
    "--args",
    '{"url":"https://no-such-host.invalid/"}',
  ], { cwd: ws });
  assert.equal(https.code, 1);
  assert.match(JSON.parse(https.stdout).error, /no-such-host\.invalid did not resolve/);
});

const _plugin = (name: string, who: string) =>
  `export const TOOL_CONFIG = {
  name: "${name}",
  description: "from ${who}",
  input_schema: { type: "object", properties: {} },
  function: () => ({ success: true, from: "${who}" }),
};
`;

Deno.test("item 6: --watch settles collisions as a fresh start does, after edits and removals", async () => {
  const { ws, base } = await tempLayout();
  const dir = `${base}/tools`;
  await Deno.mkdir(dir);
  await Deno.writeTextFile(`${dir}/a_first.ts`, _plugin("Same", "a"));
  await Deno.writeTextFile(`${dir}/b_second.ts`, _plugin("Same", "b"));
  const cache = await Deno.makeTempDir({ prefix: "corral_week_cache_" });
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [...CORRAL_ARGS, "mcp", "--watch", "--workspace", ws, "-r"],
    env: { ...childEnv(cache), CORRAL_TOOL_DIRS: dir },
    cwd: ws,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (c: Uint8Array) => stderr += _dec.decode(c));
  const client = new Client({ name: "week-test", version: "1.0.0" });
  let notified = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void notified++);
  await client.connect(transport);
  const from = async () =>
    ((await client.callTool({ name: "Same", arguments: {} })).structuredContent as {
      from: string;
    }).from;
  const waitFor = async (count: number) => {
    for (let i = 0; i < 200 && notified < count; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(notified, count, `list_changed #${count}\n${stderr}`);
  };
  try {
    assert.equal(await from().catch((e) => `${e}\n${stderr}`), "b", "fresh start: later wins");
    await Deno.writeTextFile(`${dir}/a_first.ts`, _plugin("Same", "a2"));
    for (let i = 0; i < 200 && !/reloading \S*a_first/.test(stderr); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(stderr, /reloading \S*a_first/);
    // While the reload is applied the tool may be briefly absent; then b still wins.
    let after = "";
    for (let i = 0; i < 100 && !after; i++) {
      after = await from().catch(() => new Promise((r) => setTimeout(() => r(""), 100)));
    }
    assert.equal(after, "b", "editing the earlier file does not change the winner");
    assert.equal(notified, 0, "the tools the client sees did not change");
    await Deno.remove(`${dir}/b_second.ts`);
    await waitFor(1);
    assert.equal(await from(), "a2", "the overridden tool is callable again");
  } finally {
    await client.close();
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("item 6: corral new writes a test that imports the public testing entry, and it passes", async () => {
  const { base } = await tempLayout();
  const dir = `${base}/tools`;
  const made = await runCli(["new", "EchoIt", "--dir", dir]);
  assert.equal(made.code, 0, made.stderr);
  const test = await Deno.readTextFile(`${dir}/echo_it_test.ts`);
  assert.match(test, /from "@corral\/corral\/testing"/);
  assert.doesNotMatch(test, /core\/tool\//);
  const ran = await _sh(Deno.execPath(), [
    "test",
    "--allow-read",
    "--allow-write",
    `--config=${join(ROOT, "deno.json")}`,
    "echo_it_test.ts",
  ], { cwd: dir });
  assert.equal(ran.code, 0, ran.stdout + ran.stderr);
  const denoJson = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  assert.equal(denoJson.exports["./testing"], "./core/testing.ts");
});

const _ORDER_TOOL = `export const TOOL_CONFIG = {
  name: "PlaceOrder",
  description: "Place an order",
  input_schema: {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    properties: {
      items: { type: "array", minItems: 1, items: { $ref: "#/$defs/item" } },
      contact: { type: "string", format: "email" },
      payment: {
        oneOf: [
          { type: "object", properties: { card: { type: "string" } }, required: ["card"] },
          { type: "object", properties: { iban: { type: "string" } }, required: ["iban"] },
        ],
      },
    },
    required: ["items", "contact"],
    additionalProperties: false,
    $defs: {
      item: {
        type: "object",
        properties: { sku: { type: "string" }, size: { enum: ["S", "M", "L"] }, qty: { type: "integer" } },
        required: ["sku", "qty"],
      },
    },
  },
  function: (args) => ({ success: true, got: args }),
};
`;

Deno.test("item 5: a JSON Schema input is checked in full (nested, $ref, enum, format, oneOf) with zod-like paths", async () => {
  const { ws, base } = await tempLayout();
  await Deno.mkdir(`${base}/tools`);
  await Deno.writeTextFile(`${base}/tools/order.js`, _ORDER_TOOL);
  const env = { CORRAL_TOOL_DIRS: `${base}/tools` };
  const bad = await runCli([
    "-r",
    "call",
    "PlaceOrder",
    "--args",
    JSON.stringify({
      items: [{ sku: "a", size: "XL", qty: 1 }, { qty: "2" }],
      contact: "not-an-address",
      payment: { card: "1", iban: "2" },
      note: "x",
    }),
  ], { cwd: ws, env });
  assert.equal(bad.code, 1, bad.stderr);
  const problems = JSON.parse(bad.stdout).problems as string[];
  assert.deepEqual(problems.sort(), [
    'contact: must match format "email"',
    "items.0.size: Invalid enum value. Expected 'S' | 'M' | 'L'",
    "items.1.qty: Expected integer",
    "items.1.sku: Required",
    "note: unknown parameter",
    "payment: must match exactly one schema in oneOf",
  ]);
  const good = await runCli([
    "-r",
    "call",
    "PlaceOrder",
    "--args",
    JSON.stringify({ items: [{ sku: "a", size: "M", qty: 2 }], contact: "a@example.org" }),
  ], { cwd: ws, env });
  assert.equal(good.code, 0, good.stdout + good.stderr);
  assert.equal(JSON.parse(good.stdout).got.items[0].qty, 2);
  // tools/list keeps the schema exactly as written.
  const schema = await runCli(["-r", "schema", "--format", "mcp"], { cwd: ws, env });
  const tool = (JSON.parse(schema.stdout) as Array<{ name: string; inputSchema: unknown }>)
    .find((t) => t.name === "PlaceOrder")!;
  assert.deepEqual(Object.keys((tool.inputSchema as { $defs: object }).$defs), ["item"]);
});

Deno.test("item 4: the full-privileges warning is in the human list and the mcp banner, never in call or --json", async () => {
  const { ws } = await tempLayout();
  await Deno.writeTextFile(`${ws}/a.txt`, "one two\n");
  const call = await runCli(["call", "WordCount", "--quiet", "--args", '{"filepath":"a.txt"}'], {
    cwd: ws,
  });
  assert.equal(call.code, 0, call.stderr);
  assert.equal(call.stderr, "", "stderr of call is for the call");
  const json = await runCli(["list", "--json"], { cwd: ws });
  assert.doesNotMatch(json.stderr, /full privileges/);
  assert.match((await runCli(["list"], { cwd: ws })).stderr, /runs with full privileges/);
  const mcp = await runCli(["mcp"], { cwd: ws, stdin: "" });
  assert.match(mcp.stderr, /runs with full privileges/);
});

Deno.test("item 1: the README quick start, run literally from a home with only Node and npm, installs corral and makes a first call; the uninstall line removes it", async () => {
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  const quick = readme.slice(readme.indexOf("## Quick start"));
  const block = /```sh\n([\s\S]*?)```/.exec(quick)![1];
  assert.match(block, /npm install -g deno@/);
  assert.match(block, /deno task --quiet --config \/path\/to\/corral\/deno\.json install/);
  const uninstall = /```sh\n(deno uninstall --global corral)\n```/.exec(quick)![1];
  const home = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_home_" }));
  await Deno.mkdir(`${home}/project`);
  await Deno.writeTextFile(`${home}/project/README.md`, "one two three four\n");
  const realHome = Deno.env.get("HOME") ?? "/root";
  const env = {
    HOME: home,
    NPM_CONFIG_PREFIX: `${home}/npm`, // npm -g installs into this home
    npm_config_cache: Deno.env.get("npm_config_cache") ?? `${realHome}/.npm`,
    DENO_DIR: denoDir(), // packages already fetched need not be fetched again
    PATH: `${home}/npm/bin:${Deno.env.get("PATH")}`,
    NO_COLOR: "1",
  };
  const script = block.replaceAll("/path/to/corral", ROOT.replace(/\/$/, ""));
  const run = await _sh("sh", ["-ec", script], { cwd: home, env });
  assert.equal(run.code, 0, run.stdout + run.stderr);
  const version = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))).version;
  assert.match(run.stdout, new RegExp(`^corral ${version.replaceAll(".", "\\.")} \\(Deno `, "m"));
  assert.match(run.stdout, /"words": 4/);
  assert.doesNotMatch(run.stdout + run.stderr, /Task corral/);
  assert.ok(await _exists(`${home}/.deno/bin/corral`));
  // The installed command runs corral's own deno.json, so corral's deno.lock checks it.
  const installed = await Deno.readTextFile(`${home}/.deno/bin/corral`);
  assert.match(installed, new RegExp(` --config '${join(ROOT, "deno.json")}' `));
  const gone = await _sh("sh", ["-ec", uninstall], { cwd: home, env });
  assert.equal(gone.code, 0, gone.stderr);
  assert.equal(await _exists(`${home}/.deno/bin/corral`), false);
  await Deno.remove(home, { recursive: true });
});

Deno.test("item 1: the MCP server's serverInfo.version is corral's version from deno.json", async () => {
  const cache = await Deno.makeTempDir({ prefix: "corral_week_cache_" });
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [...CORRAL_ARGS, "mcp", "-r"],
    env: childEnv(cache),
    cwd: cache,
    stderr: "pipe",
  });
  const client = new Client({ name: "week-test", version: "1.0.0" });
  await client.connect(transport);
  try {
    const version = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))).version;
    assert.equal(client.getServerVersion()?.version, version);
    assert.equal(client.getServerVersion()?.name, "corral");
  } finally {
    await client.close();
    await Deno.remove(cache, { recursive: true });
  }
});

Deno.test("item 3: corral's examples load only in corral demo or where named; the default plugin directory is in the user's config directory", async () => {
  const { ws, base } = await tempLayout();
  const config = `${base}/config`;
  const env = { CORRAL_CONFIG_DIR: config };
  const EXAMPLES = ["RollDice", "Greet", "ChangeCase", "Slugify"];
  const names = async (extra: Record<string, string> = {}) => {
    const res = await runCli(["-r", "list", "--json"], { cwd: ws, env: { ...env, ...extra } });
    assert.equal(res.code, 0, res.stderr);
    return (JSON.parse(res.stdout) as Array<{ name: string | null; status: string }>)
      .filter((t) => t.status === "loaded").map((t) => t.name);
  };
  const plain = await names();
  for (const name of EXAMPLES) assert.ok(!plain.includes(name), `${name} is offered by default`);
  const named = await names({ CORRAL_TOOL_DIRS: `${ROOT}plugins` });
  for (const name of EXAMPLES) assert.ok(named.includes(name), `${name} loads when named`);
  // corral new writes into the user's plugins directory, and what is there loads by default.
  const made = await runCli(["new", "MyEcho"], { cwd: ws, env });
  assert.equal(made.code, 0, made.stderr);
  assert.ok(made.stdout.includes(`${config}/plugins/my_echo.ts`), made.stdout);
  assert.ok((await names()).includes("MyEcho"));
  const demo = await runCli(["demo"], { cwd: ws, env });
  assert.equal(demo.code, 0, demo.stderr);
  assert.match(demo.stdout, /\$ corral call Slugify/);
  assert.match(demo.stdout, /"slug": "hello-from-a-process-sandbox"/);
});

Deno.test("item 2: corral trust: untrusted project files are ignored, trusted ones used, changed ones refused until trusted again, and no tool can write them", async () => {
  const { ws, base } = await tempLayout();
  const config = `${base}/config`;
  const env = { CORRAL_CONFIG_DIR: config };
  await Deno.mkdir(`${ws}/sub`);
  await Deno.writeTextFile(`${ws}/a.txt`, "one two\n");
  await Deno.writeTextFile(`${ws}/sub/b.txt`, "three\n");
  const policy = JSON.stringify({
    toolsets: {
      files: { read: ["sub"], write: ["."] },
      system: { run: ["bash"], read: ["."], write: ["."] },
    },
  });
  await Deno.writeTextFile(`${ws}/permissions.json`, policy);
  const count = (file: string, flags = ["-r"]) =>
    runCli([...flags, "call", "WordCount", "--args", JSON.stringify({ filepath: file })], {
      cwd: ws,
      env,
    });
  // Untrusted: ignored with a warning that says how to trust it; the shipped policy applies.
  const before = await count("a.txt");
  assert.equal(before.code, 0, before.stderr);
  assert.match(before.stderr, /ignoring .*permissions\.json: .*run "corral trust"/);
  // Trusted: exactly that file is used (read only sub/).
  const trust = await runCli(["trust"], { cwd: ws, env });
  assert.equal(trust.code, 0, trust.stderr);
  assert.match(trust.stdout, /^trusted .*\/permissions\.json \(sha256 [0-9a-f]{16}…\)/);
  assert.equal((await Deno.stat(`${config}/trusted.json`)).mode! & 0o777, 0o600);
  const outside = await count("a.txt");
  assert.equal(outside.code, 1);
  assert.match(JSON.parse(outside.stdout).error, /outside the folders this tool may use/);
  assert.doesNotMatch(outside.stderr, /ignoring/);
  assert.equal((await count("sub/b.txt")).code, 0);
  // Tools that may write the workspace cannot change it, nor create corral.json.
  const snapshot = await Deno.readTextFile(`${ws}/permissions.json`);
  const create = await runCli([
    "-rw",
    "--yes",
    "call",
    "CreateFile",
    "--args",
    JSON.stringify({ filepath: "permissions.json", content: "{}", overwrite: true }),
  ], { cwd: ws, env });
  assert.equal(create.code, 1, create.stdout);
  const bash = await runCli([
    "-rwx",
    "call",
    "RunBashCode",
    "--args",
    JSON.stringify({
      code:
        "echo '{}' > permissions.json; echo '{}' > corral.json; cat permissions.json | head -c 40",
    }),
  ], { cwd: ws, env });
  // The trusted file is read-only inside; a corral.json made there is refused when applied.
  assert.equal(bash.code, 1, bash.stderr);
  assert.match(JSON.parse(bash.stdout).stderr, /permissions\.json: Read-only file system/);
  assert.match(JSON.parse(bash.stdout).error, /corral\.json: part of corral's trust base/);
  assert.equal(await Deno.readTextFile(`${ws}/permissions.json`), snapshot);
  assert.equal(await _exists(`${ws}/corral.json`), false, "no corral.json was planted");
  assert.equal((await count("sub/b.txt")).code, 0, "still trusted: nothing changed it");
  // Changed by someone: refused, one line naming the file and the command that trusts it again.
  await Deno.writeTextFile(`${ws}/permissions.json`, policy.replace('"sub"', '"."'));
  const changed = await count("a.txt");
  assert.equal(changed.code, 2);
  assert.equal(changed.stdout, "");
  const line = changed.stderr.trim();
  assert.equal(line.split("\n").length, 1, line);
  assert.match(
    line,
    new RegExp(
      `permissions\\.json changed since it was trusted .*run: corral trust ${ws}/permissions\\.json`,
    ),
  );
  // Trusted again, by name: the new content is used.
  const again = await runCli(["trust", "permissions.json"], { cwd: ws, env });
  assert.equal(again.code, 0, again.stderr);
  assert.equal((await count("a.txt")).code, 0);
  // A project corral.json likewise: used once trusted.
  await Deno.writeTextFile(`${ws}/corral.json`, `{ "toolsets": ["net"] }`);
  const hasNet = async () =>
    (await runCli(["-r", "list", "--json"], { cwd: ws, env })).stdout.includes('"GetUrl"');
  assert.equal(await hasNet(), false);
  assert.equal((await runCli(["trust", "corral.json"], { cwd: ws, env })).code, 0);
  assert.equal(await hasNet(), true);
});
