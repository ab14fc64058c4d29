// Hosted servers' config and installs: exact versions only, one way to start,
// clear errors; the PyPI path reports an unreachable index by name.
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseConfig } from "../../../core/config/corral_config.ts";
import { offeredName } from "../../../core/hosted/_hosted_tools.ts";
import { installed, installServer } from "../../../core/hosted/install.ts";

const parse = (servers: unknown) =>
  parseConfig(JSON.stringify({ servers }), "/srv/corral.json").servers;

Deno.test("servers in corral.json: exact versions, exactly one way to start, names checked", () => {
  const [fs, git, cmd] = parse({
    fs: { npm: "@modelcontextprotocol/server-filesystem@2026.8.31", args: ["${workspace}"] },
    git: { pypi: "mcp-server-git==2025.7.1", sha256: "a".repeat(64) },
    cmd: { command: ["node", "server.js"], env: { T: { secret: "GITHUB_TOKEN" } } },
  });
  assert.deepEqual([fs.kind, fs.package, fs.version], [
    "npm",
    "@modelcontextprotocol/server-filesystem",
    "2026.8.31",
  ]);
  assert.deepEqual([git.kind, git.package, git.version, git.command], [
    "pypi",
    "mcp-server-git",
    "2025.7.1",
    ["mcp-server-git"],
  ]);
  assert.deepEqual(cmd.env, { T: { secret: "GITHUB_TOKEN" } });
  assert.throws(
    () => parse({ fs: { npm: "@modelcontextprotocol/server-filesystem" } }),
    /exact version/,
  );
  assert.throws(() => parse({ fs: { npm: "x@latest" } }), /exact version/);
  assert.throws(() => parse({ git: { pypi: "mcp-server-git>=1" } }), /exact version/);
  assert.throws(() => parse({ a: { npm: "x@1.0.0", pypi: "y==1" } }), /exactly one/);
  assert.throws(() => parse({ a: {} }), /exactly one/);
  assert.throws(() => parse({ "bad name": { command: ["x"] } }), /server name/);
  assert.throws(
    () => parse({ a: { command: ["x"], tool: {} } }),
    /unknown key "tool" \(did you mean "tools"\?\)/,
  );
  assert.throws(
    () => parse({ a: { command: ["x"], env: { T: "${x}", U: { value: 1 } } } }),
    /env\.U/,
  );
});

Deno.test("offered names: a built-in's name is prefixed; at most 64 characters of [a-zA-Z0-9_-]", () => {
  const builtins = new Set(["ReadFile", "fs_ReadFile"]);
  assert.equal(offeredName("fs", "ReadFile", (n) => builtins.has(n)), "fs_ReadFile_2");
  const long = offeredName("fs", "x".repeat(100), () => false);
  assert.ok(long.length <= 64 && /^[a-zA-Z0-9_-]+$/.test(long), long);
  assert.equal(offeredName("fs", "ok-name_1", () => false), "ok-name_1");
  assert.match(offeredName("s", "ünïcode tool/../x", () => false), /^s_[a-zA-Z0-9_-]+$/);
});

Deno.test("a PyPI server installs into a venv, or says that the index cannot be reached", async () => {
  const root = await Deno.makeTempDir({ prefix: "corral_servers_" });
  try {
    const [git] = parse({ git: { pypi: "mcp-server-git==2025.7.1" } });
    assert.match(String(installed(git, root)), /not installed: run `corral servers install git`/);
    let record;
    try {
      record = await installServer(git, root);
    } catch (err) {
      // This machine reaches no PyPI index: the error names the server and the reason.
      assert.match(
        (err as Error).message,
        /Cannot install server "git" \(mcp-server-git==2025\.7\.1\)/,
      );
      assert.match((err as Error).message, /package index could not be reached/);
      assert.match(String(installed(git, root)), /not installed/);
      return;
    }
    assert.equal(record!.kind, "pypi");
    assert.match(record!.integrity, /^sha256-record:[0-9a-f]{64}$/);
    await Deno.stat(join(record!.dir, "bin", "mcp-server-git"));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
