// Second-round attacks on the namespace, found by trying: renaming a parent
// of a protected path, creating a protected path that is not there yet,
// secrets in corral's cache, a machine without a writable cgroup, and
// control sequences on the operator's terminal.
import assert from "node:assert/strict";
import { parsePolicy } from "../../../core/config/policy.ts";
import { findBwrap } from "../../../core/jail/mod.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { FIXTURES, ROOT } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

const BWRAP = await findBwrap();
if (BWRAP === undefined) throw new Error("namespace_escape_test: no working bwrap here");

Deno.test("renaming a parent folder of a protected path fails: it stays where the next start looks", async () => {
  const { ws } = await tempLayout();
  await Deno.mkdir(`${ws}/src/plugins`, { recursive: true });
  await Deno.writeTextFile(`${ws}/src/plugins/hi.ts`, "export const TOOLS = [];\n");
  await Deno.mkdir(`${ws}/state/corral`, { recursive: true });
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: {
        files: { read: ["."], write: ["."] },
        system: { run: ["bash"], read: ["."], write: ["."] },
      },
    }),
    "t.json",
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: `${ws}/state/corral/cache`,
    auditPath: `${ws}/logs/deep/audit.jsonl`,
    reporter: new Reporter({ sink: () => {}, color: false }),
    trusted: [{ path: `${ws}/src/plugins`, what: "a plugin directory" }],
  });
  try {
    const moved = await registry.call("MoveFile", { source: "src", destination: "src2" });
    assert.equal(moved.success, false, JSON.stringify(moved));
    const res = await registry.call("RunBashCode", {
      code: [
        "mv src src.old",
        "mv logs logs.real",
        "mv logs/deep logs/deep2",
        "mv state state.old",
        "mkdir -p src/plugins && echo bad > src/plugins/evil.ts",
        "rm -rf state logs",
        "true",
      ].join("; "),
    });
    // In its layer the tool may copy things about; in the tree, the trust base stays put.
    assert.match(
      String(res.stderr) + String(res.error),
      /Device or resource busy|Read-only|trust base/,
    );
    assert.equal(await Deno.readTextFile(`${ws}/src/plugins/hi.ts`), "export const TOOLS = [];\n");
    for (const gone of ["src2", "src/plugins/evil.ts"]) {
      await assert.rejects(Deno.stat(`${ws}/${gone}`), Deno.errors.NotFound, gone);
    }
    await Deno.stat(`${ws}/logs/deep/audit.jsonl`);
    await Deno.stat(`${ws}/state/corral/cache`);
  } finally {
    await registry.close();
  }
});

Deno.test("corral's config directory cannot be created by a tool when it is missing, nor read when it exists", async () => {
  const { ws, base } = await tempLayout();
  const env = { CORRAL_CONFIG_DIR: `${ws}/.config/corral` };
  const widen = JSON.stringify({ toolsets: { files: { read: ["/"], write: ["/"], jail: "off" } } });
  const create = await runCli([
    "call",
    "CreateFile",
    "--workspace",
    ws,
    "--args",
    JSON.stringify({ filepath: ".config/corral/permissions.json", content: widen }),
  ], { env });
  assert.equal(create.code, 1, create.stdout + create.stderr);
  await assert.rejects(
    Deno.stat(`${ws}/.config/corral/permissions.json`),
    Deno.errors.NotFound,
  );
  // When it exists and holds the policy in use, sandboxes still start, and it stays hidden.
  await Deno.mkdir(`${base}/cfg`);
  await Deno.writeTextFile(
    `${base}/cfg/permissions.json`,
    JSON.stringify({ toolsets: { files: { read: ["/"] } } }),
  );
  await Deno.writeTextFile(`${base}/cfg/corral.json`, JSON.stringify({ services: {} }));
  const read = await runCli([
    "call",
    "ReadFile",
    "-r",
    "--workspace",
    ws,
    "--args",
    JSON.stringify({ filepath: `${base}/cfg/permissions.json` }),
  ], { env: { CORRAL_CONFIG_DIR: `${base}/cfg` } });
  assert.equal(read.code, 1, read.stdout + read.stderr);
  assert.doesNotMatch(read.stdout, /toolsets/, "the config directory is hidden");
  const other = await runCli([
    "call",
    "ListFiles",
    "-r",
    "--workspace",
    ws,
    "--args",
    JSON.stringify({ path: ws }),
  ], { env: { CORRAL_CONFIG_DIR: `${base}/cfg` } });
  assert.equal(other.code, 0, other.stdout + other.stderr);
});

Deno.test("a plugin's config secrets are neither in corral's cache file nor readable from a sandbox", async () => {
  const { ws, base } = await tempLayout();
  const cache = `${ws}/.cache/corral`;
  await Deno.mkdir(`${base}/tools`);
  await Deno.copyFile(
    `${FIXTURES}plugins/mixed/setup_recorder.ts`,
    `${base}/tools/setup_recorder.ts`,
  );
  await Deno.writeTextFile(
    `${base}/corral.json`,
    JSON.stringify({
      tool_dirs: ["tools"],
      default_plugin_dir: false,
      services: { setup_recorder: { token: "SECRET-TOKEN-4242" } },
    }),
  );
  const args = ["--workspace", ws, "--config", `${base}/corral.json`];
  const env = { CORRAL_CACHE_DIR: cache };
  const list = await runCli(["list", "--json", ...args], { env });
  assert.equal(list.code, 0, list.stderr);
  const text = await Deno.readTextFile(`${cache}/discovery.json`);
  assert.ok(!text.includes("SECRET-TOKEN-4242"), "the cache holds no secret");
  const grep = await runCli([
    "call",
    "RunBashCode",
    ...args,
    "--args",
    JSON.stringify({ code: "ls -a .cache/corral; grep -r SECRET .cache; true" }),
  ], { env });
  assert.equal(grep.code, 0, grep.stderr);
  assert.doesNotMatch(grep.stdout, /discovery\.json|SECRET-TOKEN/);
});

Deno.test("as root without a writable cgroup, process sandboxes are refused unless the policy accepts rlimits", async () => {
  const { ws, base } = await tempLayout();
  await Deno.writeTextFile(`${ws}/a.txt`, "one two");
  const run = (policy: string) =>
    new Deno.Command(BWRAP!, {
      args: [
        "--dev-bind",
        "/",
        "/",
        "--ro-bind",
        "/sys/fs/cgroup",
        "/sys/fs/cgroup",
        "--die-with-parent",
        "--",
        Deno.execPath(),
        "run",
        "-A",
        `${ROOT}main.ts`,
        "call",
        "WordCount",
        "-r",
        "--workspace",
        ws,
        "--permissions",
        policy,
        "--args",
        '{"filepath":"a.txt"}',
      ],
      env: { NO_COLOR: "1", CORRAL_CACHE_DIR: "", CORRAL_CONFIG_DIR: `${base}/none` },
      stdout: "piped",
      stderr: "piped",
    }).output();
  await Deno.writeTextFile(
    `${base}/strict.json`,
    JSON.stringify({ toolsets: { files: { read: ["."] } } }),
  );
  await Deno.writeTextFile(
    `${base}/loose.json`,
    JSON.stringify({ toolsets: { files: { read: ["."], limits: "rlimit" } } }),
  );
  const strict = await run(`${base}/strict.json`);
  const out = new TextDecoder().decode(strict.stdout) + new TextDecoder().decode(strict.stderr);
  if (Deno.uid() === 0) {
    assert.notEqual(strict.code, 0, out);
    assert.match(out, /no writable cgroup here, and rlimits do not bind root/);
    const loose = await run(`${base}/loose.json`);
    assert.equal(loose.code, 0, new TextDecoder().decode(loose.stderr));
    assert.match(new TextDecoder().decode(loose.stdout), /"words": 2/);
  } else {
    assert.equal(strict.code, 0, out); // rlimits bind an ordinary user
  }
});

Deno.test("control sequences from plugins and from paths never reach the operator's terminal raw", async () => {
  const { ws, base } = await tempLayout();
  await Deno.mkdir(`${base}/noisy`);
  await Deno.copyFile(`${FIXTURES}noisy/noisy.ts`, `${base}/noisy/noisy.ts`);
  await Deno.writeTextFile(
    `${base}/corral.json`,
    JSON.stringify({ tool_dirs: ["noisy"], default_plugin_dir: false }),
  );
  const res = await runCli([
    "call",
    "Noisy",
    "--workspace",
    ws,
    "--config",
    `${base}/corral.json`,
    "--no-cache",
    "--args",
    "{}",
  ]);
  assert.equal(res.code, 0, res.stderr);
  const path = await runCli([
    "call",
    "ReadFile",
    "-r",
    "--workspace",
    ws,
    "--args",
    JSON.stringify({ filepath: "evil\x1b]52;c;cHduZWQ=\x07\x1b[2J.txt" }),
  ]);
  for (const text of [res.stderr, path.stderr, path.stdout, res.stdout]) {
    assert.ok(
      !text.includes("\x1b]"),
      `a raw OSC sequence reached the terminal: ${JSON.stringify(text)}`,
    );
    assert.ok(!text.includes("\x07"), "a raw BEL reached the terminal");
  }
  assert.match(res.stderr, /\\x1b\]52;c;cHduZWQ=\\x07/, "shown, made visible");
});
