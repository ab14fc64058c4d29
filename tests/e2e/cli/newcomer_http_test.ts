// The README's HTTP token steps, followed word for word (only the port is a free one and `~` a
// fresh HOME): start the server with CORRAL_MCP_TOKEN=change-me, ask for the client's entry in
// another shell that does not hold the variable, and connect with the entry's token as the README
// says to set it: 200, and a tool call. The entry says where the running server takes its token
// from, and makes no token of its own.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  connectWithToken,
  CORRAL_ARGS,
  freePort,
  INIT_BODY,
  MCP_POST_HEADERS,
} from "../../../testing/mod.ts";

/** A README command line `VAR=v … corral ARGS…`, split as a shell would (no quotes in it). */
function _parse(line: string, home: string, port: number) {
  const words = line.replace(/\s+#.*$/, "").trim().split(/\s+/)
    .map((w) => w.replace(/^~(?=\/|$)/, home).replaceAll("8765", String(port)));
  const at = words.indexOf("corral");
  const env = Object.fromEntries(words.slice(0, at).map((w) => w.split(/=(.*)/s, 2)));
  return { env, args: words.slice(at + 1) };
}

/** The environment of a user's shell: this HOME, nothing of corral's set, no token. */
function _shell(home: string): Record<string, string> {
  const env: Record<string, string> = { ...Deno.env.toObject(), HOME: home, NO_COLOR: "1" };
  for (const key of Object.keys(env)) {
    if (/^(CORRAL_|XDG_CONFIG_HOME$|INIT_CWD$)/.test(key)) delete env[key];
  }
  return env;
}

Deno.test("the README's HTTP token steps, word for word: the entry carries the running server's token source, and its token gets a 200 and a tool call", async () => {
  const readme = await Deno.readTextFile(new URL("../../../README.md", import.meta.url));
  const http = readme.slice(readme.indexOf("Over HTTP, start it yourself"));
  const blocks = [...http.matchAll(/```(sh|json)\n([\s\S]*?)```/g)].slice(0, 3);
  assert.deepEqual(blocks.map((m) => m[1]), ["sh", "sh", "json"]);
  const [serverLine, entryLine, sample] = blocks.map((m) => m[2].trim());
  assert.match(serverLine, /^CORRAL_MCP_TOKEN=change-me corral mcp --http 127\.0\.0\.1:8765 /);
  assert.match(entryLine, /^corral mcp --client-config --http http:\/\/127\.0\.0\.1:8765\/mcp$/);

  const home = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_http_home_" }));
  await Deno.mkdir(join(home, "project"));
  await Deno.writeTextFile(join(home, "project", "notes.txt"), "one two three\n");
  const port = freePort();
  const server = _parse(serverLine, home, port);
  const child = new Deno.Command(Deno.execPath(), {
    args: [...CORRAL_ARGS, ...server.args],
    env: { ..._shell(home), ...server.env },
    clearEnv: true,
    cwd: home,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let log = "";
  try {
    while (!/MCP over Streamable HTTP at (\S+)/.test(log)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the server ended:\n${log}`);
      log += value;
    }
    const url = /MCP over Streamable HTTP at (\S+)/.exec(log)![1];
    assert.equal(url, `http://127.0.0.1:${port}/mcp`);
    assert.match(log, /bearer token required: the one in CORRAL_MCP_TOKEN/);

    // Another shell, without the variable: the entry for that server, and where its token is.
    const entryCmd = _parse(entryLine, home, port);
    const printed = await new Deno.Command(Deno.execPath(), {
      args: [...CORRAL_ARGS, ...entryCmd.args],
      env: { ..._shell(home), ...entryCmd.env },
      clearEnv: true,
      cwd: home,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    const stderr = dec.decode(printed.stderr);
    assert.equal(printed.code, 0, stderr);
    // The README's sample, exactly: the header reads the variable.
    const printedJson = JSON.parse(dec.decode(printed.stdout));
    assert.deepEqual(printedJson, JSON.parse(sample.replaceAll("8765", String(port))));
    const entry = printedJson.mcpServers.corral;
    assert.equal(entry.url, url);
    assert.equal(entry.headers.Authorization, "Bearer ${CORRAL_MCP_TOKEN}");
    assert.match(
      stderr,
      new RegExp(
        `the server running at ${url} \\(pid \\d+\\) takes the token in CORRAL_MCP_TOKEN of its ` +
          `own environment; set CORRAL_MCP_TOKEN to the same value where the client runs`,
      ),
    );
    // No token of its own: the one that got a 401 before.
    await assert.rejects(
      Deno.stat(join(home, ".config", "corral", "mcp-token")),
      Deno.errors.NotFound,
    );

    // The client, with CORRAL_MCP_TOKEN set as the README says: the entry's header as it expands.
    const token = server.env.CORRAL_MCP_TOKEN;
    const header = entry.headers.Authorization.replace("${CORRAL_MCP_TOKEN}", token);
    const ok = await fetch(url, {
      method: "POST",
      headers: { ...MCP_POST_HEADERS, Authorization: header },
      body: INIT_BODY,
    });
    await ok.body?.cancel();
    assert.equal(ok.status, 200);
    const wrong = await fetch(url, {
      method: "POST",
      headers: { ...MCP_POST_HEADERS, Authorization: "Bearer not-the-token" },
      body: INIT_BODY,
    });
    await wrong.body?.cancel();
    assert.equal(wrong.status, 401);
    const client = await connectWithToken(url, header.slice("Bearer ".length), "newcomer");
    try {
      const read = await client.callTool({
        name: "ReadFile",
        arguments: { filepath: "notes.txt" },
      });
      assert.equal(read.isError, false);
      assert.match(JSON.stringify(read.structuredContent), /one two three/);
    } finally {
      await client.close();
    }

    // The README's --show-token line, as written: the token in clear.
    const showLine = /`(CORRAL_MCP_TOKEN=change-me corral mcp --client-config [^`]*--show-token)`/
      .exec(readme)![1];
    const showCmd = _parse(showLine, home, port);
    const shown = await new Deno.Command(Deno.execPath(), {
      args: [...CORRAL_ARGS, ...showCmd.args],
      env: { ..._shell(home), ...showCmd.env },
      clearEnv: true,
      cwd: home,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(shown.code, 0, dec.decode(shown.stderr));
    const clear = JSON.parse(dec.decode(shown.stdout)).mcpServers.corral.headers.Authorization;
    assert.equal(clear, "Bearer change-me");
    assert.ok(readme.includes(`"Authorization": "${clear}"`), "the README shows it as printed");
    assert.match(dec.decode(shown.stderr), /CORRAL_MCP_TOKEN here holds it/);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await reader.cancel().catch(() => {});
    // The server's record of its token source goes with it.
    assert.deepEqual([...Deno.readDirSync(join(home, ".config", "corral", "mcp-http"))], []);
    await Deno.remove(home, { recursive: true });
  }
});
