// A stranger's first hour, driven from the outside (the CLI): each stumble
// of the first-hour issue that is fixed here.
import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CORRAL_ARGS, FIXTURES, ROOT } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";
import { childEnv } from "../../_mcp_helpers.ts";

const FH = `${FIXTURES}first_hour`;

/** A file-drop folder holding one plugin with a syntax error. */
async function _broken(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "corral_broken_" });
  await Deno.writeTextFile(
    `${dir}/bad_syntax.ts`,
    'export const TOOL_CONFIG = { name: "Broken",\n',
  );
  return dir;
}

Deno.test("plugins install of a directory is refused before anything is written; a directory in corral.json is a config error naming the entry", async () => {
  const { ws, base } = await tempLayout();
  await Deno.mkdir(`${base}/pkgdir`);
  const install = await runCli([
    "plugins",
    "install",
    `${base}/pkgdir`,
    "--config",
    `${base}/corral.json`,
  ]);
  assert.equal(install.code, 2, install.stderr);
  assert.match(install.stderr, /is a directory, not a module file/);
  await assert.rejects(Deno.stat(`${base}/corral.json`), Deno.errors.NotFound);
  await Deno.writeTextFile(`${base}/corral.json`, JSON.stringify({ plugins: [`${base}/pkgdir`] }));
  const list = await runCli(["list", "--workspace", ws, "--config", `${base}/corral.json`]);
  assert.equal(list.code, 2, list.stderr);
  assert.match(list.stderr, /corral\.json: plugins\[0\] ".*pkgdir": .* is not a module file/);
  assert.doesNotMatch(list.stderr, /internal error|^\s+at /m);
  // A package that does not exist: one clear line, no backtrace.
  const missing = await runCli([
    "plugins",
    "install",
    "npm:corral-no-such-package-zz@1.0.0",
    "--config",
    `${base}/c2.json`,
  ]);
  assert.equal(missing.code, 2);
  assert.match(
    missing.stderr,
    /Cannot install npm:corral-no-such-package-zz@1\.0\.0: .*does not exist/,
  );
  assert.doesNotMatch(missing.stderr, /Stack backtrace/);
});

Deno.test("corral.json with comments and trailing commas, as the README writes it, is accepted", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(
    `${base}/corral.json`,
    `{\n  // on-demand toolsets\n  "toolsets": ["net"],\n  "default_plugin_dir": false, // none\n}\n`,
  );
  const res = await runCli([
    "list",
    "--json",
    "--workspace",
    ws,
    "--config",
    `${base}/corral.json`,
  ]);
  assert.equal(res.code, 0, res.stderr);
  assert.ok((JSON.parse(res.stdout) as Array<{ name: string }>).some((t) => t.name === "GetUrl"));
});

Deno.test("list --json carries module failures; a tool that is not loaded says where it is and how to load it", async () => {
  const { ws } = await tempLayout();
  const res = await runCli(["list", "--json", "--workspace", ws], {
    env: { CORRAL_TOOL_DIRS: await _broken() },
  });
  assert.equal(res.code, 0, res.stderr);
  const entries = JSON.parse(res.stdout) as Array<
    { name: string | null; status: string; reason: string }
  >;
  const failed = entries.find((e) => e.status === "failed");
  assert.match(String(failed?.reason), /bad_syntax\.ts/);
  const call = await runCli([
    "call",
    "GetUrl",
    "--workspace",
    ws,
    "--args",
    '{"url":"https://x.test"}',
  ]);
  assert.equal(call.code, 2);
  assert.match(
    call.stderr,
    /"GetUrl" is not loaded: it is a built-in tool of the toolset "net".*--toolset net/,
  );
});

Deno.test("the audit log's folder is created, and a call that cannot be audited does not run unless the operator opts out", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(`${ws}/a.txt`, "one two");
  await Deno.writeTextFile(`${base}/corral.json`, JSON.stringify({ audit: "logs/audit.jsonl" }));
  const args = ["call", "WordCount", "-r", "--workspace", ws, "--args", '{"filepath":"a.txt"}'];
  const ok = await runCli([...args, "--config", `${base}/corral.json`]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(await Deno.readTextFile(`${base}/logs/audit.jsonl`), /"tool":"WordCount"/);
  // An audit path that cannot be written (a folder): refused, the tool does not run.
  await Deno.mkdir(`${base}/blocked.jsonl`);
  await Deno.writeTextFile(`${base}/c2.json`, JSON.stringify({ audit: "blocked.jsonl" }));
  const refused = await runCli([...args, "--config", `${base}/c2.json`]);
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stdout, /refused: the audit log .*blocked\.jsonl cannot be written/);
  await Deno.writeTextFile(
    `${base}/c3.json`,
    JSON.stringify({ audit: "blocked.jsonl", audit_required: false }),
  );
  const optOut = await runCli([...args, "--config", `${base}/c3.json`]);
  assert.equal(optOut.code, 0, optOut.stdout);
});

Deno.test("CLI papercuts: command help, corral help, plugins list --json, extra arguments, usage errors first, quotes, harness -j", async () => {
  const { ws } = await tempLayout();
  const callHelp = await runCli(["call", "--help"]);
  assert.equal(callHelp.code, 0);
  assert.match(callHelp.stdout, /corral call NAME \[--args JSON\]/);
  assert.doesNotMatch(callHelp.stdout, /corral list/);
  const help = await runCli(["help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Usage:/);
  assert.match((await runCli(["help", "mcp"])).stdout, /corral mcp --http/);
  const plugins = await runCli(["plugins", "list", "--json", "--workspace", ws]);
  assert.equal(plugins.code, 0, plugins.stderr);
  assert.ok(Array.isArray(JSON.parse(plugins.stdout).dirs));
  const extra = await runCli(["list", "extra", "--workspace", ws]);
  assert.equal(extra.code, 2);
  assert.match(extra.stderr, /list takes no arguments; unexpected "extra"/);
  // A usage error comes first: no plugin warning before it.
  const noName = await runCli(["call", "--workspace", ws], {
    env: { CORRAL_TOOL_DIRS: await _broken() },
  });
  assert.equal(noName.code, 2);
  assert.match(noName.stderr, /^corral: call needs an argument/);
  const unknown = await runCli(["list", "--nope"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown option --nope \(corral --help lists them\)/);
  assert.equal((unknown.stderr.match(/'/g) ?? []).length % 2, 0, "quotes are balanced");
  const harness = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}toolsets/files/word_count.ts`, `${ROOT}README.md`, "-j"],
    stdout: "piped",
    stderr: "piped",
  });
  const h = await harness.output();
  assert.equal(h.code, 0, new TextDecoder().decode(h.stderr));
  assert.ok(JSON.parse(new TextDecoder().decode(h.stdout)).words > 100);
});

Deno.test("no colour codes on a stderr that is not a terminal unless FORCE_COLOR; collisions name both toolsets and full paths", async () => {
  const { ws } = await tempLayout();
  const env = { CORRAL_TOOL_DIRS: `${FH}/a:${FH}/b`, NO_COLOR: "" };
  const plain = await runCli(["list", "--workspace", ws], { env });
  assert.equal(plain.code, 0, plain.stderr);
  assert.ok(!plain.stderr.includes("\x1b["), "no colour codes when stderr is a pipe");
  assert.match(
    plain.stderr,
    new RegExp(
      `tool "dup_tool" from plugin:b/dup \\(${FH}/b/dup\\.ts\\) replaces the one from ` +
        `plugin:a/dup \\(${FH}/a/dup\\.ts\\)`,
    ),
  );
  const forced = await runCli(["list", "--workspace", ws], { env: { ...env, FORCE_COLOR: "1" } });
  assert.ok(forced.stderr.includes("\x1b["), "FORCE_COLOR forces colour");
});

Deno.test("a plugin whose import hangs costs its discovery timeout once: unchanged, it is skipped at once with its reason", async () => {
  const { ws, base } = await tempLayout();
  await Deno.mkdir(`${base}/hang`);
  await Deno.writeTextFile(
    `${base}/hang/stuck.ts`,
    "await new Promise(() => {});\nexport const TOOLS = [];\n",
  );
  await Deno.writeTextFile(
    `${base}/p.json`,
    JSON.stringify({ plugins: { default: { discovery_timeout_ms: 1500 } } }),
  );
  const env = { CORRAL_TOOL_DIRS: `${base}/hang`, CORRAL_CACHE_DIR: `${base}/cache` };
  const args = ["list", "--json", "--workspace", ws, "--permissions", `${base}/p.json`];
  const reasonOf = (stdout: string) =>
    (JSON.parse(stdout) as Array<{ status: string; reason: string }>)
      .find((e) => e.status === "failed" && /stuck\.ts/.test(e.reason))?.reason ?? "";
  const first = await runCli(args, { env });
  assert.match(reasonOf(first.stdout), /timed out after 1500 ms/);
  assert.doesNotMatch(reasonOf(first.stdout), /remembered/);
  const second = await runCli(args, { env });
  assert.match(reasonOf(second.stdout), /timed out after 1500 ms.*\(remembered: change the file/);
});

Deno.test("a plugin class exported as default (Cogtrix's style) is instantiated and its tools load", async () => {
  const { ws } = await tempLayout();
  const res = await runCli(["call", "CogHello", "--workspace", ws, "--args", "{}"], {
    env: { CORRAL_TOOL_DIRS: `${FH}/cog` },
  });
  assert.equal(res.code, 0, res.stderr);
  assert.equal(JSON.parse(res.stdout).hello, "from a class");
});

/** An SDK client on `corral mcp` over stdio, with -r -w -x. */
async function _mcp(ws: string, cache: string) {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [...CORRAL_ARGS, "mcp", "--workspace", ws, "-r", "-w", "-x"],
    env: childEnv(cache),
    stderr: "pipe",
  });
  const client = new Client({ name: "first-hour", version: "1" });
  await client.connect(transport);
  return client;
}

Deno.test("two concurrent ReplaceTextInFile calls on one file (over MCP) both land", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(`${ws}/f.txt`, "alpha\nbeta\n");
  const client = await _mcp(ws, `${base}/cache`);
  try {
    const edits = await Promise.all([
      client.callTool({
        name: "ReplaceTextInFile",
        arguments: { filepath: "f.txt", search: "alpha", replace: "ALPHA" },
      }),
      client.callTool({
        name: "ReplaceTextInFile",
        arguments: { filepath: "f.txt", search: "beta", replace: "BETA" },
      }),
    ]);
    for (const e of edits) assert.notEqual(e.isError, true, JSON.stringify(e.content));
    assert.equal(await Deno.readTextFile(`${ws}/f.txt`), "ALPHA\nBETA\n");
  } finally {
    await client.close();
  }
});

Deno.test("output of a process bash starts in the background is collected (every run of 12)", async () => {
  const { ws, base } = await tempLayout();
  const client = await _mcp(ws, `${base}/cache`);
  try {
    for (let i = 0; i < 12; i++) {
      const r = await client.callTool({
        name: "RunBashCode",
        arguments: { code: "echo test & echo done" },
      });
      const out = String((r.structuredContent as { stdout?: string })?.stdout);
      assert.match(out, /test/, `run ${i}: ${out}`);
      assert.match(out, /done/);
    }
  } finally {
    await client.close();
  }
});

Deno.test("a misspelt plugin entry in the policy is named with a did-you-mean; the hint names the plugin's own entry", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(
    `${base}/p.json`,
    JSON.stringify({ plugins: { count_todo: { read: ["."] } } }),
  );
  const res = await runCli(
    ["list", "--json", "--workspace", ws, "--permissions", `${base}/p.json`],
    {
      env: { CORRAL_TOOL_DIRS: `${FH}/todos` },
    },
  );
  assert.equal(res.code, 0, res.stderr);
  assert.match(
    res.stderr,
    /plugins\.count_todo: no plugin has that name \(did you mean: count_todos/,
  );
  const tool = (JSON.parse(res.stdout) as Array<{ name: string; reason: string }>)
    .find((t) => t.name === "CountTodos")!;
  assert.match(
    tool.reason,
    /add "read": \[\.\.\.\] to plugins\.count_todos, this plugin's own entry/,
  );
});

Deno.test("a sandbox's permission error names the policy change, not a Deno flag", async () => {
  const { ws, base, outside } = await tempLayout();
  await Deno.writeTextFile(`${outside}/x.txt`, "x");
  await Deno.writeTextFile(
    `${base}/p.json`,
    JSON.stringify({ plugins: { peek: { read: ["."] } } }),
  );
  const res = await runCli([
    "call",
    "Peek",
    "--workspace",
    ws,
    "--permissions",
    `${base}/p.json`,
    "--args",
    JSON.stringify({ path: `${outside}/x.txt` }),
  ], { env: { CORRAL_TOOL_DIRS: `${FH}/peek` } });
  assert.equal(res.code, 1, res.stderr);
  const error = JSON.parse(res.stdout).error as string;
  assert.doesNotMatch(error, /--allow-read/);
  assert.match(
    error,
    /may not read ".*x\.txt": to allow it, .* "read" of plugins\.peek in …\/p\.json/,
  );
});

Deno.test("ListFiles takes a glob, the interpreters a working_directory, and ReadFile reports the encoding and refuses binary", async () => {
  const { ws, base } = await tempLayout();
  await Deno.mkdir(`${ws}/src/deep`, { recursive: true });
  await Deno.writeTextFile(`${ws}/src/a.ts`, "a");
  await Deno.writeTextFile(`${ws}/src/deep/b.ts`, "b");
  await Deno.writeTextFile(`${ws}/src/c.md`, "c");
  await Deno.writeFile(`${ws}/latin1.txt`, new Uint8Array([0x63, 0x61, 0x66, 0xe9]));
  await Deno.writeFile(`${ws}/img.bin`, new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 1]));
  await Deno.writeTextFile(`${ws}/ok.txt`, "héllo\n");
  const client = await _mcp(ws, `${base}/cache`);
  try {
    const call = async (name: string, args: Record<string, unknown>) =>
      (await client.callTool({ name, arguments: args })).structuredContent as Record<
        string,
        unknown
      >;
    const names = (r: Record<string, unknown>) =>
      (r.entries as Array<{ path: string }>).map((e) => e.path).sort();
    assert.deepEqual(
      names(await call("ListFiles", { path: "src", recursive: true, pattern: "*.ts" })),
      [
        "src/a.ts",
        "src/deep/b.ts",
      ],
    );
    assert.deepEqual(
      names(await call("ListFiles", { path: "src", recursive: true, pattern: "deep/**" })),
      ["src/deep", "src/deep/b.ts"],
    );
    const pwd = await call("RunBashCode", { code: "pwd", working_directory: "src/deep" });
    assert.equal(pwd.stdout, `${ws}/src/deep\n`);
    const outside = await call("RunBashCode", { code: "pwd", working_directory: "../outside" });
    assert.equal(outside.success, false);
    assert.match(String(outside.error), /permission denied/);
    const ok = await call("ReadFile", { filepath: "ok.txt" });
    assert.equal(ok.encoding, "utf-8");
    assert.equal(ok.content, "héllo");
    const latin = await call("ReadFile", { filepath: "latin1.txt" });
    assert.match(String(latin.error), /is not UTF-8 text/);
    const bin = await call("ReadFile", { filepath: "img.bin" });
    assert.match(String(bin.error), /looks binary/);
  } finally {
    await client.close();
  }
});

Deno.test("an unknown key in the policy or the config names the closest known one", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(`${base}/p.json`, '{"toolsets": {"files": {"raed": ["."]}}}');
  const policy = await runCli(["list", "--workspace", ws, "--permissions", `${base}/p.json`]);
  assert.equal(policy.code, 2);
  assert.match(policy.stderr, /toolsets\.files: unknown key "raed" \(did you mean "read"\?\)/);
  await Deno.writeTextFile(`${base}/c.json`, '{"tool_dir": ["x"]}');
  const config = await runCli(["list", "--workspace", ws, "--config", `${base}/c.json`]);
  assert.equal(config.code, 2);
  assert.match(config.stderr, /unknown key "tool_dir" \(did you mean "tool_dirs"\?\)/);
});

Deno.test("run from corral's own folder, a command gets an empty scratch workspace and says so; --workspace naming it is refused", async () => {
  const here = await runCli(["list", "--json", "-r"], { cwd: ROOT });
  assert.equal(here.code, 0, here.stderr);
  assert.match(
    here.stderr,
    /corral's own folder is never a workspace; using an empty scratch workspace/,
  );
  const named = await runCli(["list", "-r", "--workspace", ROOT]);
  assert.equal(named.code, 2);
  assert.match(named.stderr, /the workspace would be corral's own folder/);
});
