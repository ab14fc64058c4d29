// A plugin folder with a broken file, a symlink that leads outside it and a name defined twice:
// `corral call`, `corral schema NAME`, `corral list`, `corral check` and an MCP `tools/call` say
// the same thing about each, in one voice: the file's own reason (never "unknown tool"), the
// duplicate named once by its one file, warnings once per start in one casing. Settings files
// that do not parse say line, column and what was expected.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { runCli, tempLayout } from "../../_helpers.ts";
import { CORRAL_ARGS } from "../../../testing/mod.ts";

let _cacheDir: string | undefined;
/** One discovery cache for this file's tests: the built-ins are discovered once. */
async function _cache(): Promise<string> {
  if (_cacheDir) return _cacheDir;
  const dir = _cacheDir = await Deno.makeTempDir({ prefix: "corral_newcomer_cache_" });
  globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
  return dir;
}

/** A config folder whose default plugin folder holds the three mistakes and one good file. */
async function _setup() {
  const { base, ws, outside } = await tempLayout();
  const config = join(base, "config");
  const plugins = join(config, "plugins");
  await Deno.mkdir(plugins, { recursive: true });
  await Deno.writeTextFile(
    join(plugins, "broken.ts"),
    'export const TOOL_CONFIG = { name: "Broken",\n',
  );
  await Deno.writeTextFile(
    join(outside, "linked.ts"),
    'export const TOOL_CONFIG = { name: "Linked", description: "l", function: () => "l" };\n',
  );
  await Deno.symlink(join(outside, "linked.ts"), join(plugins, "linked.ts"));
  await Deno.writeTextFile(
    join(plugins, "dup_todos.ts"),
    'export const TOOL_CONFIGS = [{ name: "Shout", description: "first", function: () => "a" },\n' +
      '  { name: "Shout", description: "second", function: () => "b" }];\n',
  );
  await Deno.writeTextFile(
    join(plugins, "echo.ts"),
    'export const TOOL_CONFIG = { name: "Echo", description: "e", function: () => "e" };\n',
  );
  const env = { CORRAL_CONFIG_DIR: config, CORRAL_CACHE_DIR: await _cache() };
  return { base, ws, outside, plugins, env };
}

const BROKEN = /Tool "Broken" did not load: \.\.\.\/broken\.ts: import failed: SyntaxError/;
const TWICE = "defined twice in";

Deno.test("a broken plugin, a rejected symlink and a name defined twice: call, schema, list and check say why, in the same words", async () => {
  const { base, ws, plugins, env, outside } = await _setup();
  const args = ["-r", "--workspace", ws];
  const broken = await runCli(["call", "Broken", ...args], { env });
  assert.equal(broken.code, 2);
  assert.match(broken.stderr, BROKEN);
  assert.doesNotMatch(broken.stderr, /Unknown tool|did you mean|corral --help/);
  const linked = await runCli(["call", "Linked", ...args], { env });
  assert.equal(linked.code, 2);
  assert.match(
    linked.stderr,
    new RegExp(
      `Tool "Linked" did not load: rejected ${plugins}/linked\\.ts: it is a symlink to ` +
        `${outside}/linked\\.ts, outside the plugin directory ${plugins}`,
    ),
  );
  const schema = await runCli(["schema", "Broken", ...args], { env });
  assert.equal(schema.code, 2);
  assert.match(schema.stderr, BROKEN);
  const echoSchema = await runCli(["schema", "Echo", ...args], { env });
  assert.equal(echoSchema.code, 0, echoSchema.stderr);
  assert.equal(JSON.parse(echoSchema.stdout).function.name, "Echo");
  // A name no file may define: unknown, with the closest names and the files that did not load.
  const typo = await runCli(["call", "Ech", ...args], { env });
  assert.equal(typo.code, 2);
  assert.match(
    typo.stderr,
    /Unknown tool "Ech" \(did you mean: Echo.*\?\); 2 plugin files did not load/,
  );

  // The duplicate: one place named, once per start, one casing; the later definition runs.
  const shout = await runCli(["call", "Shout", ...args], { env });
  assert.equal(shout.code, 0, shout.stderr);
  assert.equal(JSON.parse(shout.stdout).output, "b");
  const warning = `Warning: tool "Shout" is ${TWICE} plugin:plugins/dup_todos ` +
    `(${plugins}/dup_todos.ts); the later definition is used`;
  assert.equal(shout.stderr.split(warning).length - 1, 1, shout.stderr);
  assert.doesNotMatch(shout.stderr, /replaces the one from|WARNING/);
  // Another tool's call is not told about Shout.
  const echo = await runCli(["call", "Echo", ...args], { env });
  assert.equal(echo.code, 0, echo.stderr);
  assert.doesNotMatch(echo.stderr, /Shout/);

  const list = await runCli(["list", ...args], { env });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^NAME +TOOLSET +LETTERS ISOLATION STATUS$/m);
  assert.match(list.stdout, /did not load: \.\.\.\/broken\.ts: import failed: SyntaxError/);
  assert.match(
    list.stdout,
    new RegExp(`did not load: rejected ${plugins}/linked\\.ts: it is a symlink`),
  );
  assert.match(
    list.stdout,
    new RegExp(
      `^Shout .* overridden: ${TWICE} \\.\\.\\./dup_todos\\.ts; the later definition is used$`,
      "m",
    ),
  );
  assert.equal(list.stderr.split(warning).length - 1, 1, list.stderr);
  assert.match(list.stderr, /^Warning: 2 plugin files did not load \(corral list says why\)$/m);
  assert.doesNotMatch(list.stderr, /WARNING|warning:/);

  const check = await runCli(["check", plugins], { env });
  assert.equal(check.code, 1);
  assert.match(check.stdout, /FAIL {2}import failed: SyntaxError/);
  assert.match(
    check.stdout,
    new RegExp(`FAIL {2}rejected ${plugins}/linked\\.ts: it is a symlink`),
  );
  assert.match(
    check.stdout,
    new RegExp(
      `FAIL {2}Shout: name is duplicated: ${TWICE} ${plugins}/dup_todos\\.ts; the later definition is used`,
    ),
  );
  await Deno.remove(base, { recursive: true });
});

Deno.test("MCP tools/call of a tool whose file did not load gives that file's reason; the duplicate is listed once", async () => {
  const { base, ws, env } = await _setup();
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: [...CORRAL_ARGS, "mcp", "-r", "--workspace", ws],
    env: { ...Deno.env.toObject(), NO_COLOR: "1", ...env },
    cwd: ws,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d: Uint8Array) => stderr += new TextDecoder().decode(d));
  const client = new Client({ name: "newcomer", version: "1" });
  await client.connect(transport);
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.equal(names.filter((n) => n === "Shout").length, 1);
    assert.ok(!names.includes("Broken") && !names.includes("Linked"));
    await assert.rejects(client.callTool({ name: "Broken", arguments: {} }), (err: Error) => {
      assert.match(err.message, BROKEN);
      assert.match(err.message, /\(at …\/broken\.ts:1:\d+\)/);
      assert.doesNotMatch(err.message, new RegExp(base));
      return true;
    });
    // The model is not told host paths outside the workspace.
    await assert.rejects(
      client.callTool({ name: "Linked", arguments: {} }),
      /Tool "Linked" did not load: rejected …\/linked\.ts: it is a symlink to …\/linked\.ts, outside the plugin directory …\/plugins/,
    );
    const shout = await client.callTool({ name: "Shout", arguments: {} });
    assert.equal((shout.structuredContent as { output: string }).output, "b");
  } finally {
    await client.close();
  }
  assert.equal(stderr.split(`tool "Shout" is ${TWICE}`).length - 1, 1, stderr);
  assert.doesNotMatch(stderr, /WARNING/);
  await Deno.remove(base, { recursive: true });
});

Deno.test("a permissions.json or corral.json that does not parse names the file, line, column and what was expected", async () => {
  const { base, ws } = await tempLayout();
  await Deno.writeTextFile(
    join(base, "p.json"),
    '{\n  "plugins": {\n    "default": { "read": ["."] "write": [] }\n  }\n}\n',
  );
  const policy = await runCli(["list", "--workspace", ws, "--permissions", join(base, "p.json")]);
  assert.equal(policy.code, 2);
  assert.match(
    policy.stderr,
    new RegExp(
      `${base}/p\\.json:3:32: not valid JSON: expected "," between two entries \\(or the ` +
        `closing bracket\\), found "write"`,
    ),
  );
  assert.doesNotMatch(policy.stderr, /CommaExpected|Expected/);
  await Deno.writeTextFile(join(base, "c.json"), '{ "tool_dirs": ["a", }');
  const config = await runCli(["list", "--workspace", ws, "--config", join(base, "c.json")]);
  assert.equal(config.code, 2);
  assert.match(config.stderr, /c\.json:1:\d+: not valid JSON: expected a value, found "}"/);
  assert.doesNotMatch(config.stderr, /ValueExpected/);
  await Deno.remove(base, { recursive: true });
});
