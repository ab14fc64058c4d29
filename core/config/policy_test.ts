import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigError } from "../tool/errors.ts";
import { INSTALL_DIR } from "./install_dir.ts";
import { DEFAULT_LIMITS, formatPath, loadPolicy, parsePolicy, readyJsonc } from "./policy.ts";

// Some texts below are JSONC or invalid JSON: load the JSONC parser up front.
await readyJsonc();

async function _withTemp(fn: (dir: string) => Promise<void> | void): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral-policy-" }));
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function _configError(text: string, expected: string | RegExp): void {
  assert.throws(
    () => parsePolicy(text, "permissions.json", "/tmp"),
    (err: Error) => {
      assert.ok(err instanceof ConfigError, `not a ConfigError: ${err}`);
      if (typeof expected === "string") assert.equal(err.message, expected);
      else assert.match(err.message, expected);
      return true;
    },
  );
}

Deno.test("parsePolicy names the file and key path of a wrong type", () => {
  _configError(
    '{"toolsets":{"files":{"read":[1]}}}',
    "permissions.json: toolsets.files.read[0]: Expected string, received number",
  );
});

Deno.test("parsePolicy names an unknown key and where it is", () => {
  _configError(
    '{"toolsets":{"files":{"reed":["."]}}}',
    'permissions.json: toolsets.files: unknown key "reed" (did you mean "read"?)',
  );
  _configError(
    '{"toolset":{}}',
    'permissions.json: (top level): unknown key "toolset" (did you mean "toolsets"?)',
  );
  _configError(
    '{"tools":{"Echo":{"confirm":"ask","auto":true}}}',
    'permissions.json: tools.Echo: unknown key "auto"',
  );
});

Deno.test("parsePolicy names several unknown keys in one line", () => {
  _configError(
    '{"plugins":{"default":{"a":1,"b":2}}}',
    'permissions.json: plugins.default: unknown keys "a", "b"',
  );
});

Deno.test("parsePolicy reports every problem, one line each", () => {
  _configError(
    '{"toolsets":{"files":{"read":[1],"write":"."}}}',
    "permissions.json: toolsets.files.read[0]: Expected string, received number\n" +
      "permissions.json: toolsets.files.write: Expected array, received string",
  );
});

Deno.test("parsePolicy names the file of invalid JSON", () => {
  _configError('{"toolsets": ', /^permissions\.json:1:\d+: not valid JSON: /);
});

Deno.test("parsePolicy refuses an isolation other than worker or process", () => {
  _configError(
    '{"toolsets":{"files":{"isolation":"vm"}}}',
    /^permissions\.json: toolsets\.files\.isolation: Invalid enum value\. Expected 'worker' \| 'process', received 'vm'$/,
  );
});

Deno.test("parsePolicy refuses limits out of range and a bad confirm value", () => {
  _configError(
    '{"defaults":{"memory_mb":8}}',
    /^permissions\.json: defaults\.memory_mb: Number must be greater than or equal to 32$/,
  );
  _configError(
    '{"tools":{"Shell":{"confirm":"sometimes"}}}',
    /^permissions\.json: tools\.Shell\.confirm: Invalid enum value/,
  );
});

Deno.test("parsePolicy refuses a top-level value that is not an object", () => {
  _configError("[]", "permissions.json: (top level): Expected object, received array");
});

Deno.test("policy paths resolve to absolute real paths against the workspace", async () => {
  await _withTemp(async (ws) => {
    await Deno.mkdir(join(ws, "data"));
    const p = parsePolicy(
      JSON.stringify({ toolsets: { files: { read: [".", "data", "./data/../data"] } } }),
      "permissions.json",
      ws,
    );
    assert.deepEqual(p.toolset("files").read, [ws, join(ws, "data"), join(ws, "data")]);
  });
});

Deno.test("policy paths that do not exist yet stay absolute as written", async () => {
  await _withTemp((ws) => {
    const p = parsePolicy('{"toolsets":{"files":{"write":["out/new"]}}}', "p.json", ws);
    assert.deepEqual(p.toolset("files").write, [join(ws, "out/new")]);
  });
});

Deno.test("a symlinked workspace dir resolves to its real path", async () => {
  await _withTemp(async (base) => {
    const real = join(base, "real-ws");
    const link = join(base, "link-ws");
    await Deno.mkdir(real);
    await Deno.mkdir(join(real, "src"));
    await Deno.symlink(real, link);
    const p = parsePolicy('{"toolsets":{"files":{"read":[".","src"]}}}', "p.json", link);
    assert.deepEqual(p.toolset("files").read, [real, join(real, "src")]);
  });
});

Deno.test("a grant path reached through a symlink inside the workspace is refused, naming both", async () => {
  await _withTemp(async (base) => {
    const ws = join(base, "ws");
    const target = join(base, "elsewhere");
    await Deno.mkdir(ws);
    await Deno.mkdir(target);
    await Deno.symlink(target, join(ws, "shortcut"));
    const p = parsePolicy(
      '{"toolsets":{"files":{"read":["shortcut", "."],"write":["shortcut/deep/out"]}}}',
      "p.json",
      ws,
    );
    const files = p.toolset("files");
    // Dropped from the grant (a tool could have made that link), and said why.
    assert.deepEqual([files.read, files.write], [[ws], []]);
    assert.equal(files.linkedLetters, "rw");
    assert.match(files.linked!, /toolsets\.files\.read "shortcut" is reached through the symlink/);
    assert.ok(files.linked!.includes(`${ws}/shortcut (-> ${target})`), files.linked);
    // A symlink outside the workspace is the operator's own: followed as before.
    const q = parsePolicy(
      `{"toolsets":{"files":{"read":["${join(ws, "shortcut")}"]}}}`,
      "p",
      target,
    );
    assert.equal(q.toolset("files").linked, undefined);
    assert.deepEqual(q.toolset("files").read, [target]);
  });
});

Deno.test("policy paths starting with ~/ resolve against HOME", async () => {
  await _withTemp(async (ws) => {
    const home = Deno.env.get("HOME");
    assert.ok(home, "HOME is not set");
    const p = parsePolicy('{"toolsets":{"files":{"read":["~/no-such-corral-dir"]}}}', "p", ws);
    const realHome = await Deno.realPath(home);
    const got = p.toolset("files").read[0];
    assert.ok(
      got === join(home, "no-such-corral-dir") || got === join(realHome, "no-such-corral-dir"),
      got,
    );
  });
});

Deno.test("a toolset defaults to process isolation, nothing granted and default limits", () => {
  const p = parsePolicy("{}", "permissions.json", "/tmp");
  assert.deepEqual(p.toolset("files"), {
    read: [],
    write: [],
    run: [],
    net: [],
    env: [],
    isolation: "process",
    timeout_ms: DEFAULT_LIMITS.timeout_ms,
    discovery_timeout_ms: 10_000,
    memory_mb: DEFAULT_LIMITS.memory_mb,
    max_output_bytes: DEFAULT_LIMITS.max_output_bytes,
    max_read_bytes: DEFAULT_LIMITS.max_read_bytes,
    max_processes: DEFAULT_LIMITS.max_processes,
    allow_override: false,
    where: "toolsets.files",
    file: "permissions.json",
  });
});

Deno.test("a plugin defaults to process isolation and nothing granted", () => {
  const p = parsePolicy('{"toolsets":{"files":{"read":["."]}}}', "permissions.json", "/tmp");
  const plugin = p.plugin("plugin:my/tool");
  assert.equal(plugin.isolation, "process");
  assert.deepEqual(
    [plugin.read, plugin.write, plugin.run, plugin.net],
    [[], [], [], []],
  );
  assert.equal(plugin.allow_override, false);
  assert.equal(plugin.where, "plugins.default");
});

Deno.test("plugins.default applies to plugins without their own entry", async () => {
  await _withTemp((ws) => {
    const p = parsePolicy(
      JSON.stringify({
        plugins: {
          default: { read: ["."], net: ["example.com"] },
          "plugin:mine/tool": { write: ["."], isolation: "worker" },
          short: { run: ["git"] },
        },
      }),
      "permissions.json",
      ws,
    );
    const unknown = p.plugin("plugin:other/tool");
    assert.deepEqual(unknown.read, [ws]);
    assert.deepEqual(unknown.net, ["example.com"]);
    assert.equal(unknown.where, "plugins.default");

    const own = p.plugin("plugin:mine/tool");
    assert.deepEqual(own.read, []);
    assert.deepEqual(own.write, [ws]);
    assert.equal(own.isolation, "worker");
    assert.equal(own.where, "plugins.plugin:mine/tool");

    const byShortName = p.plugin("npm:@x/short@1.0.0", "short");
    assert.deepEqual(byShortName.run, ["git"]);
    assert.equal(byShortName.where, "plugins.short");
  });
});

Deno.test("defaults fill limits and env where an entry says nothing; an entry wins", () => {
  const p = parsePolicy(
    JSON.stringify({
      defaults: { timeout_ms: 5000, memory_mb: 64, max_output_bytes: 2048, env: ["LANG"] },
      toolsets: { system: { timeout_ms: 100, env: ["TERM"] } },
    }),
    "permissions.json",
    "/tmp",
  );
  const files = p.toolset("files");
  assert.deepEqual(
    [files.timeout_ms, files.memory_mb, files.max_output_bytes, files.env],
    [5000, 64, 2048, ["LANG"]],
  );
  const system = p.toolset("system");
  assert.equal(system.timeout_ms, 100);
  assert.deepEqual(system.env, ["LANG", "TERM"]);
});

Deno.test("defaults refuse grants: paths, commands and hosts are named per toolset", () => {
  assert.throws(
    () =>
      parsePolicy(
        '{"defaults":{"read":["."],"write":["."],"run":["sh"],"net":["example.com"]}}',
        "p.json",
        "/tmp",
      ),
    (err: Error) =>
      err.name === "ConfigError" &&
      /p\.json: defaults: unknown keys "read", "write", "run", "net"/.test(err.message),
  );
});

Deno.test("confirm() defaults to ask and follows tools.<name>.confirm", () => {
  const p = parsePolicy(
    '{"tools":{"Shell":{"confirm":"always"},"Echo":{"confirm":"never"}}}',
    "permissions.json",
    "/tmp",
  );
  assert.equal(p.confirm("ReadFile"), "ask");
  assert.equal(p.confirm("Shell"), "always");
  assert.equal(p.confirm("Echo"), "never");
  assert.equal(parsePolicy("{}", "p.json", "/tmp").confirm("Anything"), "ask");
});

Deno.test("the policy keeps its file and workspace", () => {
  const p = parsePolicy("{}", "/etc/corral/permissions.json", "/tmp");
  assert.equal(p.file, "/etc/corral/permissions.json");
  assert.equal(p.workspace, "/tmp");
});

Deno.test("formatPath joins keys with dots and indexes with brackets", () => {
  assert.equal(formatPath(["toolsets", "files", "read", 0]), "toolsets.files.read[0]");
  assert.equal(formatPath([]), "(top level)");
  assert.equal(formatPath(["a", 1, 2, "b"]), "a[1][2].b");
});

Deno.test("loadPolicy never takes permissions.json from the workspace; the config directory's wins", async () => {
  await _withTemp(async (ws) => {
    const own = join(ws, "config");
    // A policy a tool could have written into the workspace: named, not used.
    await Deno.writeTextFile(join(ws, "permissions.json"), '{"toolsets":{"files":{"read":["/"]}}}');
    const shipped = await loadPolicy({ workspace: ws, configDir: own });
    assert.equal(shipped.file, join(INSTALL_DIR, "permissions.json"));
    assert.equal(shipped.ignored, join(ws, "permissions.json"));
    assert.deepEqual(shipped.toolset("files").read, [ws]);
    await Deno.mkdir(own);
    await Deno.writeTextFile(
      join(own, "permissions.json"),
      '{"toolsets":{"files":{"read":["sub"]}}}',
    );
    const p = await loadPolicy({ workspace: ws, configDir: own });
    assert.equal(p.file, join(own, "permissions.json"));
    assert.deepEqual(p.toolset("files").read, [join(ws, "sub")]);
  });
});

Deno.test("loadPolicy names a policy file it cannot read", async () => {
  await _withTemp(async (ws) => {
    const file = join(ws, "missing.json");
    await assert.rejects(
      loadPolicy({ workspace: ws, file }),
      (err: Error) =>
        err instanceof ConfigError && err.message.startsWith(`Cannot read policy file "${file}"`),
    );
  });
});

Deno.test("loadPolicy errors name the file it read", async () => {
  await _withTemp(async (ws) => {
    const file = join(ws, "custom.json");
    await Deno.writeTextFile(file, '{"toolsets":{"files":{"read":[1]}}}');
    await assert.rejects(
      loadPolicy({ workspace: ws, file }),
      (err: Error) =>
        err instanceof ConfigError &&
        err.message === `${file}: toolsets.files.read[0]: Expected string, received number`,
    );
  });
});
