import assert from "node:assert/strict";
import { ROOT } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

Deno.test("corral list --json prints an array of tools with status and reasons", async () => {
  const { code, stdout } = await runCli(["list", "--json"]);
  assert.equal(code, 0);
  const tools = JSON.parse(stdout) as Array<Record<string, unknown>>;
  const read = tools.find((t) => t.name === "ReadFile")!;
  assert.equal(read.toolset, "files");
  assert.equal(read.permissions, "r");
  assert.equal(read.status, "loaded");
  assert.equal(read.isolation, "process");
  assert.match(String(read.source), /toolsets\/files\/read_file\.ts$/);
  for (const t of tools) {
    assert.deepEqual(
      Object.keys(t).slice(0, 6),
      ["name", "toolset", "permissions", "status", "reason", "source"],
    );
  }
  assert.ok(!tools.some((t) => t.name === "GetUrl"), "net is on demand");
});

Deno.test("--toolset net loads the on-demand toolset, skipped until hosts are granted", async () => {
  const { stdout } = await runCli(["list", "--json", "--toolset", "net"]);
  const get = (JSON.parse(stdout) as Array<Record<string, unknown>>).find((t) =>
    t.name === "GetUrl"
  )!;
  assert.equal(get.status, "skipped");
  assert.match(
    String(get.reason),
    /needs n \(net\): \S*permissions\.json grants no hosts to toolsets\.net/,
  );
});

Deno.test("flags -r alone load only read tools and list says which letter is missing", async () => {
  const { stdout, stderr } = await runCli(["list", "--json", "-r"]);
  const tools = JSON.parse(stdout) as Array<Record<string, unknown>>;
  for (const t of tools) {
    const onlyRead = /^r?$/.test(String(t.permissions));
    assert.equal(t.status === "loaded", onlyRead, `${t.name} ${t.status}`);
  }
  const create = tools.find((t) => t.name === "CreateFile")!;
  assert.equal(create.reason, "needs w (write): start corral with -w");
  assert.doesNotMatch(stderr, /full privileges/);
});

Deno.test("no privilege flags: the human list warns of full privileges, list --json does not", async () => {
  assert.match((await runCli(["list"])).stderr, /runs with full privileges/);
  assert.doesNotMatch((await runCli(["list", "--json"])).stderr, /full privileges/);
});

Deno.test("a host started with only --allow-read loads only r tools (Deno's own grants)", async () => {
  // Process sandboxes need a host that may start processes: this host
  // cannot, so the policy trusts the toolsets with worker isolation.
  const { ws, base } = await tempLayout();
  const worker = { isolation: "worker", read: ["."], write: ["."] };
  await Deno.writeTextFile(
    `${base}/p.json`,
    JSON.stringify({
      toolsets: { files: worker, system: { ...worker, run: ["bash", "python3"] } },
    }),
  );
  const { code, stdout } = await runCli(
    ["list", "--json", "--workspace", ws, "--permissions", `${base}/p.json`],
    { flags: ["--allow-read"] },
  );
  assert.equal(code, 0);
  const tools = JSON.parse(stdout) as Array<Record<string, unknown>>;
  assert.ok(tools.length >= 8);
  const loaded = tools.filter((t) => t.status === "loaded").map((t) => t.permissions);
  assert.ok(loaded.length >= 4);
  assert.ok(loaded.every((p) => p === "r"), `only r tools load: ${loaded}`);
  const write = tools.find((t) => t.name === "CreateFile")!;
  assert.match(String(write.reason), /needs w \(write\): start corral with --allow-write/);
  const bash = tools.find((t) => t.name === "RunBashCode")!;
  // Every missing letter in one refusal.
  assert.match(
    String(bash.reason),
    /needs w \(write\), x \(run\): start corral with --allow-write --allow-run/,
  );
});

Deno.test("a host that cannot write the code store refuses a plugin it cannot pin, built-ins load", async () => {
  // A plugin runs only from its pinned copy: without write access to the code
  // store there is no copy, and the plugin must never run from its own path.
  const { ws, base } = await tempLayout();
  await Deno.mkdir(`${base}/pl`);
  await Deno.copyFile(`${ROOT}plugins/greeting.ts`, `${base}/pl/greeting.ts`);
  await Deno.writeTextFile(`${base}/c.json`, JSON.stringify({ tool_dirs: [`${base}/pl`] }));
  const worker = { isolation: "worker", read: ["."] };
  await Deno.writeTextFile(
    `${base}/p.json`,
    JSON.stringify({ toolsets: { files: worker } }),
  );
  const store = `${base}/store`;
  const { code, stdout, stderr } = await runCli(
    [
      "list",
      "--json",
      "--workspace",
      ws,
      "--permissions",
      `${base}/p.json`,
      "--config",
      `${base}/c.json`,
    ],
    { flags: ["--allow-read", "--allow-env"], env: { CORRAL_CACHE_DIR: store } },
  );
  assert.equal(code, 0, stderr);
  const tools = JSON.parse(stdout) as Array<Record<string, unknown>>;
  assert.equal(tools.find((t) => t.name === "ReadFile")?.status, "loaded");
  const plugin = tools.filter((t) => t.source === `${base}/pl/greeting.ts`);
  assert.ok(plugin.length > 0 && plugin.every((t) => t.status === "failed"), stdout);
  assert.match(
    String(plugin[0].reason),
    /not started: cannot pin ".*\/pl\/greeting\.ts": corral runs a plugin only from its pinned copy/,
  );
  await assert.rejects(Deno.lstat(store), Deno.errors.NotFound);
});

Deno.test("corral call prints pure JSON on stdout and progress on stderr", async () => {
  const { ws } = await tempLayout();
  await Deno.writeTextFile(`${ws}/a.txt`, "one two\nthree\n");
  const { code, stdout, stderr } = await runCli(
    ["call", "WordCount", "--args", '{"filepath":"a.txt"}', "--workspace", ws],
  );
  assert.equal(code, 0, stderr);
  const result = JSON.parse(stdout);
  assert.equal(result.success, true);
  assert.equal(result.words, 3);
  assert.equal(result.filepath, "a.txt");
  assert.match(stderr, /a\.txt/, "progress went to stderr");
});

Deno.test("corral call exits 1 on a failing tool and 2 on usage errors", async () => {
  const { ws } = await tempLayout();
  const missing = await runCli([
    "call",
    "ReadFile",
    "--args",
    '{"filepath":"nope.txt"}',
    "--workspace",
    ws,
  ]);
  assert.equal(missing.code, 1);
  const res = JSON.parse(missing.stdout);
  assert.equal(res.success, false);
  assert.match(res.error, /^Cannot run tool "ReadFile": .*not found/);

  const badJson = await runCli(["call", "ReadFile", "--args", "{nope"]);
  assert.equal(badJson.code, 2);
  assert.match(badJson.stderr, /--args is not valid JSON/);
  assert.equal(badJson.stdout, "");

  const unknown = await runCli(["call", "ReadFlie", "--args", "{}"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /Unknown tool "ReadFlie" \(did you mean: ReadFile/);

  const cmd = await runCli(["frobnicate"]);
  assert.equal(cmd.code, 2);
  assert.match(cmd.stderr, /unknown command "frobnicate"/);
});

Deno.test("corral call with bad arguments lists every problem and does not run the tool", async () => {
  const { ws } = await tempLayout();
  const { code, stdout } = await runCli([
    "call",
    "CreateFile",
    "--args",
    '{"content": 5, "overwrite": "yes"}',
    "--workspace",
    ws,
  ]);
  assert.equal(code, 1);
  const res = JSON.parse(stdout);
  assert.match(res.error, /filepath: Required/);
  assert.match(res.error, /content: Expected string, received number/);
  assert.match(res.error, /overwrite: Expected boolean, received string/);
  assert.deepEqual([...Deno.readDirSync(ws)], [], "nothing was created");
});

Deno.test("corral call --args - reads the arguments from stdin", async () => {
  const { ws } = await tempLayout();
  await Deno.writeTextFile(`${ws}/b.txt`, "x y z");
  const { code, stdout } = await runCli(
    ["call", "WordCount", "--args", "-", "--workspace", ws],
    { stdin: '{"filepath":"b.txt"}' },
  );
  assert.equal(code, 0);
  assert.equal(JSON.parse(stdout).words, 3);
});

Deno.test("a tool needing confirmation is refused without a terminal and without --yes", async () => {
  const { ws } = await tempLayout();
  await Deno.writeTextFile(`${ws}/keep.txt`, "keep");
  const refused = await runCli(
    ["call", "DeleteFile", "--args", '{"filepath":"keep.txt"}', "--workspace", ws],
  );
  assert.equal(refused.code, 1);
  assert.match(
    JSON.parse(refused.stdout).error,
    /needs confirmation: approve it \(corral call --yes\)/,
  );
  assert.equal(await Deno.readTextFile(`${ws}/keep.txt`), "keep");
  const approved = await runCli(
    ["call", "DeleteFile", "--args", '{"filepath":"keep.txt"}', "--workspace", ws, "--yes"],
  );
  assert.equal(approved.code, 0, approved.stdout);
  await assert.rejects(Deno.stat(`${ws}/keep.txt`), Deno.errors.NotFound);
});

Deno.test("an invalid permissions.json stops the host with the key path, no stack trace", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(
    `${base}/permissions.json`,
    JSON.stringify({ toolsets: { files: { read: [5], isolation: "vm" } } }),
  );
  const { code, stdout, stderr } = await runCli(
    ["list", "--workspace", ws, "--permissions", `${base}/permissions.json`],
    { cwd: ws },
  );
  assert.equal(code, 2);
  assert.equal(stdout, "");
  assert.match(
    stderr,
    /permissions\.json: toolsets\.files\.read\[0\]: Expected string, received number/,
  );
  assert.match(stderr, /toolsets\.files\.isolation: Invalid enum value/);
  assert.doesNotMatch(stderr, /^\s+at /m, "no stack trace");
});

Deno.test("corral schema prints the catalog in each format", async () => {
  for (
    const [format, key] of [["openai", "function"], ["anthropic", "input_schema"], [
      "mcp",
      "inputSchema",
    ]]
  ) {
    const { code, stdout } = await runCli(["schema", "--format", format, "-r"]);
    assert.equal(code, 0);
    const list = JSON.parse(stdout) as Array<Record<string, unknown>>;
    assert.ok(list.length >= 4);
    assert.ok(list.every((t) => key in t), format);
  }
  const bad = await runCli(["schema", "--format", "xml"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--format must be openai, anthropic or mcp/);
});

Deno.test("a symlink in the workspace pointing outside is refused end to end", async () => {
  const { ws, outside } = await tempLayout();
  await Deno.writeTextFile(`${outside}/secret.txt`, "top secret");
  await Deno.symlink(`${outside}/secret.txt`, `${ws}/link.txt`);
  const { code, stdout } = await runCli(
    ["call", "ReadFile", "--args", '{"filepath":"link.txt"}', "--workspace", ws],
  );
  assert.equal(code, 1);
  assert.doesNotMatch(stdout, /top secret/);
  assert.match(JSON.parse(stdout).error, /link\.txt/);
});

Deno.test("the README quick start pins the same Deno version as .deno-version", async () => {
  const version = (await Deno.readTextFile(`${ROOT}.deno-version`)).trim();
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  const pinned = [...readme.matchAll(/npx -y deno@([0-9.]+)/g)].map((m) => m[1]);
  assert.ok(pinned.length >= 2, "README shows the start and test commands");
  assert.ok(pinned.every((v) => v === version), `README pins ${pinned}, .deno-version ${version}`);
  assert.equal(Deno.version.deno, version, "this suite runs on the pinned Deno");
});

Deno.test("x tools hold only the commands they declare, not the toolset's whole run list", async () => {
  const { ws } = await tempLayout();
  const tools = JSON.parse((await runCli(["list", "--json", "--workspace", ws])).stdout) as Array<
    { name: string; status: string; grant: { run: string[] }; reason: string | null }
  >;
  const bash = tools.find((t) => t.name === "RunBashCode")!;
  assert.deepEqual(bash.grant.run.filter((c) => c !== "bwrap" && !c.endsWith("/bwrap")), ["bash"]);
  const python = tools.find((t) => t.name === "RunPythonCode")!;
  assert.ok(!python.grant.run.includes("bash"), "RunPythonCode cannot run bash directly");

  const { base } = await tempLayout();
  await Deno.writeTextFile(
    `${base}/permissions.json`,
    JSON.stringify({ toolsets: { system: { run: ["bash"], read: ["."], write: ["."] } } }),
  );
  const narrowed = JSON.parse(
    (await runCli([
      "list",
      "--json",
      "--workspace",
      ws,
      "--permissions",
      `${base}/permissions.json`,
    ]))
      .stdout,
  ) as typeof tools;
  const py = narrowed.find((t) => t.name === "RunPythonCode")!;
  assert.equal(py.status, "skipped");
  assert.match(
    String(py.reason),
    /needs x \(run\) for python3: toolsets\.system\.run in \S*permissions\.json does not list it/,
  );
  assert.equal(narrowed.find((t) => t.name === "RunBashCode")!.status, "loaded");
});

Deno.test("a misspelt toolset or tool in permissions.json is named in a warning", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(
    `${base}/permissions.json`,
    JSON.stringify({
      toolsets: { filez: { read: ["."] } },
      tools: { DeleteFiles: { confirm: "never" } },
    }),
  );
  const { code, stderr } = await runCli(
    ["list", "--json", "--workspace", ws, "--permissions", `${base}/permissions.json`],
    { cwd: ws },
  );
  assert.equal(code, 0);
  assert.match(stderr, /permissions\.json: toolsets\.filez: no built-in toolset has that name/);
  assert.match(stderr, /permissions\.json: tools\.DeleteFiles: no loaded tool has that name/);
});

Deno.test("a workspace that does not exist is a usage error naming it, not a crash", async () => {
  const { code, stderr } = await runCli(["list", "--workspace", "/nonexistent/corral-ws"]);
  assert.equal(code, 2);
  assert.match(stderr, /--workspace "\/nonexistent\/corral-ws": no such directory/);
  assert.doesNotMatch(stderr, /internal error|^\s+at /m);
});

Deno.test("corral --version prints corral's and Deno's versions", async () => {
  const { code, stdout } = await runCli(["--version"]);
  assert.equal(code, 0);
  const { version } = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  assert.equal(stdout.trim(), `corral ${version} (Deno ${Deno.version.deno})`);
});

Deno.test("deno.json's corral and start tasks run the host with exactly HOST_FLAGS", async () => {
  const { HOST_FLAGS } = await import("../../../core/sandbox/host_flags.ts");
  const { tasks } = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  for (const name of ["corral", "start"]) {
    const flags = (tasks[name] as string).split(" ").filter((a) => /^--(allow|v8)-/.test(a));
    assert.deepEqual(flags, [...HOST_FLAGS], name);
  }
});
