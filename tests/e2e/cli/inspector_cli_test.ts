/**
 * The current MCP Inspector CLI (`@modelcontextprotocol/inspector` 2.x, the
 * version the README names) lists and calls corral's tools, over stdio and
 * over HTTP with a token, as a user types it. The Inspector is installed
 * from npm into `.corral/inspector` once (like the hosted test servers), then
 * run with node.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { CORRAL_ARGS, ROOT } from "../../../testing/mod.ts";
import {
  childEnv,
  startHttpCorral,
  type TempWorkspace,
  tempWorkspace,
} from "../../_mcp_helpers.ts";

const VERSION = "2.12.0";
const DIR = join(ROOT, ".corral", "inspector");
const BIN = join(DIR, "node_modules", ".bin", "mcp-inspector");
const TOKEN = "inspector-test-token-0123456789";

async function _installed(): Promise<string> {
  try {
    const pkg = JSON.parse(
      await Deno.readTextFile(
        join(DIR, "node_modules", "@modelcontextprotocol", "inspector", "package.json"),
      ),
    );
    if (pkg.version === VERSION) return BIN;
  } catch { /* not installed yet */ }
  const npm = await new Deno.Command("npm", {
    args: [
      "install",
      "--prefix",
      DIR,
      "--no-audit",
      "--no-fund",
      `@modelcontextprotocol/inspector@${VERSION}`,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(
    npm.code,
    0,
    `npm could not install the Inspector ${VERSION}: ${new TextDecoder().decode(npm.stderr)}`,
  );
  return BIN;
}

async function _inspector(args: string[], ws: TempWorkspace): Promise<unknown> {
  const out = await new Deno.Command(await _installed(), {
    args: ["--cli", ...args],
    cwd: ws.dir,
    env: { ...childEnv(ws.cache), CORRAL_CACHE_DIR: ws.cache },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(
    out.code,
    0,
    `inspector ${args.join(" ")}:\n${text}\n${new TextDecoder().decode(out.stderr)}`,
  );
  return JSON.parse(text);
}

function _check(list: unknown, call: unknown, how: string): void {
  const names = (list as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
  assert.ok(names.includes("ListFiles") && names.includes("ReadFile"), `${how}: ${names}`);
  const r = call as {
    isError?: boolean;
    structuredContent?: { entries?: Array<{ path: string }> };
  };
  assert.equal(r.isError, false, `${how}: ${JSON.stringify(call)}`);
  assert.deepEqual(r.structuredContent?.entries?.map((e) => e.path), ["notes.txt"], how);
}

Deno.test(`the MCP Inspector CLI ${VERSION} lists and calls tools over stdio`, async () => {
  await using ws = await tempWorkspace();
  // The Inspector starts the server with its own few variables: a run whose packages are in
  // another Deno cache (DENO_DIR) passes it on, or the server would fetch them again.
  const denoDir = Deno.env.get("DENO_DIR");
  const server = [
    ...(denoDir ? ["-e", `DENO_DIR=${denoDir}`] : []),
    "--",
    Deno.execPath(),
    ...CORRAL_ARGS,
    "mcp",
    "--workspace",
    ws.dir,
    "-r",
  ];
  const list = await _inspector(["--method", "tools/list", ...server], ws);
  const call = await _inspector(
    ["--method", "tools/call", "--tool-name", "ListFiles", "--tool-arg", "path=.", ...server],
    ws,
  );
  _check(list, call, "stdio");
});

Deno.test(`the MCP Inspector CLI ${VERSION} lists and calls tools over HTTP with a token`, async () => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0", "--token", TOKEN], ws);
  const auth = ["--header", `Authorization: Bearer ${TOKEN}`];
  const list = await _inspector([corral.url, ...auth, "--method", "tools/list"], ws);
  const call = await _inspector(
    [
      corral.url,
      ...auth,
      "--method",
      "tools/call",
      "--tool-name",
      "ListFiles",
      "--tool-arg",
      "path=.",
    ],
    ws,
  );
  _check(list, call, "http");
  // Without the token the Inspector gets nothing.
  const bare = await new Deno.Command(BIN, {
    args: ["--cli", corral.url, "--method", "tools/list"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.notEqual(bare.code, 0);
  assert.doesNotMatch(new TextDecoder().decode(bare.stdout), /ListFiles/);
});
