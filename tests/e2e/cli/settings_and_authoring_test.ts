// A user's second week (issue 31), driven from the outside: the CLI as a user types it.
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

const SHIPPED = join(ROOT, "permissions.json");

/** A temp layout with a config directory of its own: the user's `~/.config/corral`. */
async function _home() {
  const l = await tempLayout();
  const config = join(l.base, "config");
  await Deno.mkdir(config);
  return { ...l, config, env: { CORRAL_CONFIG_DIR: config } };
}

type Entry = { key: string; value: unknown; from: string[] };

function _entry(list: Entry[], key: string): Entry {
  const e = list.find((x) => x.key === key);
  assert.ok(e, `corral config has ${key}: ${JSON.stringify(list.map((x) => x.key))}`);
  return e;
}

Deno.test("item 1: settings merge by key, corral config says where each comes from, refusals name the file to edit", async () => {
  const h = await _home();
  const userPolicy = join(h.config, "permissions.json");
  // A user file with only a net entry keeps the shipped grants of every other toolset.
  await Deno.writeTextFile(userPolicy, '{"toolsets": {"net": {"net": ["example.com"]}}}');
  const listed = await runCli(["-r", "list", "--json", "--workspace", h.ws], { env: h.env });
  assert.equal(listed.code, 0, listed.stderr);
  const tools = JSON.parse(listed.stdout) as Array<{ name: string; status: string }>;
  assert.equal(tools.find((t) => t.name === "ReadFile")?.status, "loaded");
  const shown = await runCli(["config", "--json", "--workspace", h.ws], { env: h.env });
  assert.equal(shown.code, 0, shown.stderr);
  let view = JSON.parse(shown.stdout);
  assert.deepEqual(_entry(view.permissions, "toolsets.files.read").from, [SHIPPED]);
  assert.deepEqual(_entry(view.permissions, "toolsets.net.net"), {
    key: "toolsets.net.net",
    value: ["example.com"],
    from: [userPolicy],
  });
  assert.equal(view.edit, userPolicy);

  // A trusted project adds to the user's files key by key: the user's later edits still count.
  await Deno.writeTextFile(
    join(h.config, "corral.json"),
    JSON.stringify({ audit: "audit.jsonl", tool_dirs: ["tools"] }),
  );
  await Deno.writeTextFile(
    join(h.ws, "permissions.json"),
    '{"toolsets": {"files": {"read": ["docs"]}}}',
  );
  await Deno.writeTextFile(join(h.ws, "corral.json"), '{"toolsets": ["net"]}');
  const trust = await runCli(["trust", "--workspace", h.ws], { env: h.env });
  assert.equal(trust.code, 0, trust.stderr);
  await Deno.writeTextFile(
    userPolicy,
    '{"toolsets": {"net": {"net": ["example.com"]}}, "plugins": {"default": {"timeout_ms": 1234}}}',
  );
  view = JSON.parse(
    (await runCli(["config", "--json", "--workspace", h.ws], { env: h.env })).stdout,
  );
  const projectPolicy = join(h.ws, "permissions.json");
  assert.deepEqual(_entry(view.permissions, "toolsets.files.read"), {
    key: "toolsets.files.read",
    value: ["docs"],
    from: [projectPolicy],
  });
  assert.deepEqual(_entry(view.permissions, "toolsets.files.write").from, [SHIPPED]);
  assert.deepEqual(_entry(view.permissions, "plugins.default.timeout_ms"), {
    key: "plugins.default.timeout_ms",
    value: 1234,
    from: [userPolicy],
  });
  assert.equal(view.edit, projectPolicy);
  // corral.json: the user's audit log and tool_dirs stay; the project's toolsets add.
  assert.deepEqual(_entry(view.config, "audit").value, join(h.config, "audit.jsonl"));
  assert.deepEqual(_entry(view.config, "audit").from, [join(h.config, "corral.json")]);
  assert.deepEqual(_entry(view.config, "tool_dirs").value, [join(h.config, "tools")]);
  assert.deepEqual(_entry(view.config, "toolsets").from, [join(h.ws, "corral.json")]);
  assert.deepEqual(view.effective.toolsets.value, ["net"]);
  assert.equal(view.effective.audit.value, join(h.config, "audit.jsonl"));
  const human = await runCli(["config", "--workspace", h.ws], { env: h.env });
  assert.match(
    human.stdout,
    new RegExp(`toolsets\\.files\\.read = \\["docs"\\]\\s+\\(${projectPolicy}\\)`),
  );

  // A refusal and the list banner name the file to edit.
  await Deno.remove(join(h.ws, "permissions.json"));
  await Deno.remove(join(h.ws, "corral.json"));
  await Deno.writeTextFile(userPolicy, '{"toolsets": {"files": {"read": []}}}');
  const list = await runCli(["-r", "list", "--workspace", h.ws], { env: h.env });
  assert.equal(list.code, 0, list.stderr);
  assert.match(
    list.stdout,
    new RegExp(
      `ReadFile .*needs r \\(read\\): ${userPolicy} grants no read paths to toolsets\\.files`,
    ),
  );
  assert.match(list.stdout, new RegExp(`grants are changed in ${userPolicy}`));
  const call = await runCli(
    ["-r", "call", "WordCount", "--args", '{"filepath":"x"}', "--workspace", h.ws],
    { env: h.env },
  );
  assert.equal(call.code, 1);
  // The model's copy names the file without the host path before it.
  assert.match(JSON.parse(call.stdout).error, /…\/permissions\.json grants no read paths/);

  // --help says what corral trust does with a project's files.
  const help = (await runCli(["--help"])).stdout;
  assert.doesNotMatch(help, /never one in the workspace/);
  assert.match(help, /--permissions PATH\s+a policy file merged over the others/);
  assert.match(help, /the project's once trusted with\s+corral trust/);
  await Deno.remove(h.base, { recursive: true });
});

Deno.test("item 3: the README's authoring examples, copied into the default plugin folder, work as written", async () => {
  const h = await _home();
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  const section = readme.slice(
    readme.indexOf("## Writing tools"),
    readme.indexOf("## A first MCP client"),
  );
  const blocks = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 2, "two styles");
  assert.match(blocks[0], /from "@corral\/corral"/);
  await Deno.mkdir(join(h.config, "plugins"));
  await Deno.writeTextFile(join(h.config, "plugins", "count_words.ts"), blocks[0]);
  await Deno.writeTextFile(join(h.config, "plugins", "shout.ts"), blocks[1]);
  // The class example reads a file: plugins get nothing by default, so the user grants it.
  await Deno.writeTextFile(
    join(h.config, "permissions.json"),
    '{"plugins": {"count_words": {"read": ["."]}}}',
  );
  await Deno.writeTextFile(join(h.ws, "a.txt"), "one two three\n");
  const words = await runCli(
    ["-r", "call", "CountWords", "--args", '{"filepath":"a.txt"}', "--workspace", h.ws],
    { env: h.env },
  );
  assert.equal(words.code, 0, words.stdout + words.stderr);
  assert.equal(JSON.parse(words.stdout).words, 3);
  const shout = await runCli(
    ["-r", "call", "Shout", "--args", '{"text":"hi"}', "--workspace", h.ws],
    { env: h.env },
  );
  assert.equal(shout.code, 0, shout.stdout + shout.stderr);
  assert.equal(JSON.parse(shout.stdout).text, "HI");
  await Deno.remove(h.base, { recursive: true });
});

Deno.test("item 4: corral new writes where plugins load, never shadows a tool, says when --dir is not loaded", async () => {
  const h = await _home();
  const made = await runCli(["new", "EchoIt"], { cwd: h.ws, env: h.env });
  assert.equal(made.code, 0, made.stderr);
  assert.match(made.stdout, new RegExp(`wrote ${join(h.config, "plugins", "echo_it.ts")}`));
  assert.doesNotMatch(made.stdout, /does not load/);
  const text = await Deno.readTextFile(join(h.config, "plugins", "echo_it.ts"));
  assert.match(text, /from "@corral\/corral"/);
  const called = await runCli(
    ["-r", "call", "EchoIt", "--args", '{"text":"hi"}', "--workspace", h.ws],
    { env: h.env },
  );
  assert.equal(called.code, 0, called.stdout + called.stderr);
  assert.equal(JSON.parse(called.stdout).text, "hi");
  // The same name again, or a built-in's, is refused: the new file would shadow (or hide behind) it.
  const twice = await runCli(["new", "EchoIt"], { cwd: h.ws, env: h.env });
  assert.equal(twice.code, 2);
  assert.match(twice.stderr, /a tool named "EchoIt" already exists \(in .*echo_it\.ts\)/);
  const builtin = await runCli(["new", "ReadFile"], { cwd: h.ws, env: h.env });
  assert.equal(builtin.code, 2);
  assert.match(builtin.stderr, /already exists \(a built-in tool of the toolset "files"\)/);
  // A folder corral does not load: written, and said so.
  const elsewhere = join(h.base, "elsewhere");
  const other = await runCli(["new", "Other", "--dir", elsewhere], { cwd: h.ws, env: h.env });
  assert.equal(other.code, 0, other.stderr);
  assert.match(other.stdout, new RegExp(`corral does not load plugins from ${elsewhere}`));
  // With tool_dirs configured, new still writes into the first folder corral loads.
  await Deno.writeTextFile(join(h.config, "corral.json"), `{"tool_dirs": ["${elsewhere}"]}`);
  const second = await runCli(["new", "Second"], { cwd: h.ws, env: h.env });
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stdout, new RegExp(`wrote ${join(h.config, "plugins", "second.ts")}`));
  await Deno.remove(h.base, { recursive: true });
});

Deno.test("item 7: every missing letter in one refusal; a tool without parameters needs no --args", async () => {
  const h = await _home();
  const bash = await runCli(
    ["-r", "call", "RunBashCode", "--args", '{"code":"true"}', "--workspace", h.ws],
    { env: h.env },
  );
  assert.equal(bash.code, 1);
  assert.match(
    JSON.parse(bash.stdout).error,
    /needs w \(write\), x \(run\): start corral with -w -x/,
  );
  await Deno.mkdir(join(h.config, "plugins"));
  await Deno.writeTextFile(
    join(h.config, "plugins", "ping.ts"),
    'export const TOOL_CONFIGS = [{ name: "Ping", description: "Answer pong", ' +
      'function: () => ({ success: true, text: "pong" }) }];\n',
  );
  const ping = await runCli(["-r", "call", "Ping", "--workspace", h.ws], { env: h.env });
  assert.equal(ping.code, 0, ping.stdout + ping.stderr);
  assert.equal(JSON.parse(ping.stdout).text, "pong");
  // A tool that has parameters says which one is missing.
  const words = await runCli(["-r", "call", "WordCount", "--workspace", h.ws], { env: h.env });
  assert.equal(words.code, 1);
  assert.match(JSON.parse(words.stdout).error, /filepath/);
  await Deno.remove(h.base, { recursive: true });
});

Deno.test("item 9: ListFiles skips .git's inside, audit reads the settings' log, list columns hold long names", async () => {
  const h = await _home();
  await Deno.mkdir(join(h.ws, ".git", "objects"), { recursive: true });
  await Deno.writeTextFile(join(h.ws, ".git", "HEAD"), "ref: refs/heads/main\n");
  await Deno.mkdir(join(h.ws, "src"));
  await Deno.writeTextFile(join(h.ws, "src", "a.txt"), "a\n");
  await Deno.writeTextFile(join(h.config, "corral.json"), '{"audit": "audit.jsonl"}');
  const listed = await runCli(
    ["-r", "call", "ListFiles", "--args", '{"recursive": true}', "--workspace", h.ws],
    { env: h.env },
  );
  assert.equal(listed.code, 0, listed.stdout + listed.stderr);
  const paths = (JSON.parse(listed.stdout).entries as Array<{ path: string }>).map((e) => e.path);
  assert.ok(paths.includes(".git") && paths.includes("src/a.txt"), paths.join());
  assert.ok(!paths.some((p) => p.startsWith(".git/")), `nothing inside .git: ${paths.join()}`);
  // corral audit without a path reads the audit log corral.json names.
  const audit = await runCli(["audit", "--workspace", h.ws], { cwd: h.ws, env: h.env });
  assert.equal(audit.code, 0, audit.stderr);
  assert.match(audit.stdout, /ListFiles/);
  // A tool name longer than the name column does not shift the columns after it.
  await Deno.mkdir(join(h.config, "plugins"));
  const long = "AVeryLongToolNameThatRunsPastTheNameColumn";
  await Deno.writeTextFile(
    join(h.config, "plugins", "long.ts"),
    `export const TOOL_CONFIGS = [{ name: "${long}", description: "x", function: () => "x" }];\n`,
  );
  const table = await runCli(["-r", "list", "--workspace", h.ws], { env: h.env });
  assert.equal(table.code, 0, table.stderr);
  const row = (name: string) => table.stdout.split("\n").find((l) => l.startsWith(`${name} `))!;
  const column = (line: string) => line.search(/ (files|plugin:\S+) /);
  assert.ok(row(long) && row("ReadFile"), table.stdout);
  assert.equal(column(row(long)), column(row("ReadFile")), table.stdout);
  await Deno.remove(h.base, { recursive: true });
});

Deno.test("item 10: a host started with --allow-read --allow-env loads the read-only tools, in a worker, and says why", async () => {
  const h = await _home();
  await Deno.writeTextFile(join(h.ws, "a.txt"), "one two\n");
  const flags = ["--allow-read", "--allow-env"];
  const listed = await runCli(["list", "--json", "--workspace", h.ws], { flags, env: h.env });
  assert.equal(listed.code, 0, listed.stderr);
  const tools = JSON.parse(listed.stdout) as Array<Record<string, string>>;
  const read = tools.find((t) => t.name === "ReadFile")!;
  assert.equal(read.status, "loaded");
  assert.equal(read.isolation, "worker");
  assert.match(read.fallback, /no --allow-run/);
  for (const name of ["ListFiles", "SearchText", "WordCount"]) {
    assert.equal(tools.find((t) => t.name === name)?.status, "loaded", name);
  }
  for (const name of ["CreateFile", "RunBashCode"]) {
    assert.equal(tools.find((t) => t.name === name)?.status, "skipped", name);
  }
  const human = await runCli(["list", "--workspace", h.ws], { flags, env: h.env });
  assert.match(human.stderr, /tools run WITHOUT the sandbox namespace \(a worker: the host has no/);
  const call = await runCli(
    ["call", "WordCount", "--args", '{"filepath":"a.txt"}', "--workspace", h.ws],
    { flags, env: h.env },
  );
  assert.equal(call.code, 0, call.stdout + call.stderr);
  assert.equal(JSON.parse(call.stdout).words, 2);
  await Deno.remove(h.base, { recursive: true });
});

Deno.test("cold call: the sandbox started ahead is taken only for the same plan", async () => {
  const h = await _home();
  const cache = join(h.base, "cache");
  const env = { ...h.env, CORRAL_CACHE_DIR: cache };
  await Deno.writeTextFile(join(h.ws, "a.txt"), "one two three\n");
  const call = () =>
    runCli(["-r", "call", "WordCount", "--args", '{"filepath":"a.txt"}', "--workspace", h.ws], {
      env,
    });
  const first = await call();
  assert.equal(first.code, 0, first.stdout + first.stderr);
  const recipes = [...Deno.readDirSync(join(cache, "prestart"))];
  assert.equal(recipes.length, 1, "the call's launch plan is kept");
  const kept = await Deno.readTextFile(join(cache, "prestart", recipes[0].name));
  assert.doesNotMatch(kept, /"write":\["\//, "no write grant is ever started ahead");
  // Started ahead and adopted.
  const second = await call();
  assert.equal(second.code, 0, second.stdout + second.stderr);
  assert.equal(JSON.parse(second.stdout).words, 3);
  // A changed policy changes the plan: the early sandbox is not taken, the answer is right.
  await Deno.writeTextFile(
    join(h.config, "permissions.json"),
    '{"toolsets": {"files": {"memory_mb": 300}}}',
  );
  const third = await call();
  assert.equal(third.code, 0, third.stdout + third.stderr);
  assert.equal(JSON.parse(third.stdout).words, 3);
  assert.notEqual(
    await Deno.readTextFile(join(cache, "prestart", recipes[0].name)),
    kept,
    "the new plan is kept",
  );
  await Deno.remove(h.base, { recursive: true });
});
