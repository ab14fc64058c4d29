// Hosted servers that live all day keep their state when another session writes, and see
// what it wrote (issue 39). Two `corral mcp` on stdio and one `corral mcp --http` with two
// sessions, over one workspace; every session hosts two stateful servers with a write grant:
// one written for this test (a value in memory, an id drawn at its start) and the real
// sequential-thinking server (its thought history lives only in memory). Session B of each
// transport writes 20 times (files made, changed, removed) with RunBashCode; session A then
// still holds its value and its thoughts, sees B's files (and the other transport's) at its
// next call, by relative and absolute names, and its server is the same process.
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { findBwrap } from "../../../core/jail/mod.ts";
import { layerBases } from "../../../core/config/install_dir.ts";
import { fixtureServer, HOSTED_FIXTURES } from "../../../testing/mod.ts";
import {
  approve,
  type HostedLayout,
  hostedLayout,
  hostedMcpSpawn,
  hostedRegistry,
} from "../../_hosted_helpers.ts";
import { type CallResult, textOf } from "../../_mcp_helpers.ts";

if (await findBwrap() === undefined) throw new Error("hosted_view_test: no working bwrap here");

const SERVERS = {
  state: {
    command: fixtureServer(join(HOSTED_FIXTURES, "state_server.ts")),
    // Its tools carry no annotations; the operator says they need no confirmation.
    confirm: { remember_value: false, recall_value: false, server_id: false, look_files: false },
  },
  thinking: {
    npm: "@modelcontextprotocol/server-sequential-thinking@2026.8.31",
    env: { DISABLE_THOUGHT_LOGGING: "true" },
    confirm: { sequentialthinking: false },
  },
};
const GRANTS = { state: { read: ["."], write: ["."] }, thinking: { read: ["."], write: ["."] } };
const WRITES = 20;

async function _setup(l: HostedLayout): Promise<void> {
  const { registry } = await hostedRegistry(l, SERVERS, GRANTS);
  try {
    await approve(registry, "state");
    await approve(registry, "thinking");
  } finally {
    await registry.close();
  }
  await Deno.writeTextFile(join(l.base, "corral.json"), JSON.stringify({ servers: SERVERS }));
  await Deno.writeTextFile(
    join(l.base, "permissions.json"),
    JSON.stringify({
      servers: GRANTS,
      toolsets: { system: { run: ["bash"], read: ["."], write: ["."] } },
    }),
  );
}

async function _stdio(l: HostedLayout, name: string): Promise<Client> {
  const client = new Client({ name, version: "1" });
  await client.connect(new StdioClientTransport(hostedMcpSpawn(l)), { timeout: 180_000 });
  return client;
}

/** `corral mcp --http` on the layout, without a token (loopback), and its URL. */
async function _http(l: HostedLayout): Promise<{ url: string; child: Deno.ChildProcess }> {
  const spawn = hostedMcpSpawn(l);
  const child = new Deno.Command(spawn.command, {
    args: [...spawn.args, "--http", "127.0.0.1:0", "--no-token"],
    env: spawn.env,
    cwd: spawn.cwd,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let url: string | undefined;
  while (url === undefined) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`corral mcp --http ended before listening:\n${text}`);
    text += value;
    url = /(http:\/\/\S+\/mcp)/.exec(text)?.[1];
  }
  void (async () => {
    while (!(await reader.read()).done) { /* drain */ }
  })();
  return { url, child };
}

async function _httpClient(url: string, name: string): Promise<Client> {
  const client = new Client({ name, version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)), { timeout: 180_000 });
  return client;
}

async function _call(c: Client, name: string, args: Record<string, unknown> = {}) {
  const r = await c.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  assert.equal(r.isError ?? false, false, `${name}: ${JSON.stringify(r)}`);
  return r as CallResult;
}

const _json = (r: CallResult) => JSON.parse(textOf(r));

async function _think(c: Client, n: number): Promise<number> {
  const r = await _call(c, "sequentialthinking", {
    thought: `step ${n}`,
    thoughtNumber: n,
    totalThoughts: 5,
    nextThoughtNeeded: true,
  });
  return (r.structuredContent as { thoughtHistoryLength: number }).thoughtHistoryLength;
}

/** B's 20 writes, each a RunBashCode call; returns the files' expected contents (null: removed). */
async function _writes(b: Client, tag: string): Promise<Map<string, string | null>> {
  const want = new Map<string, string | null>();
  for (let i = 1; i <= WRITES; i++) {
    let code = `echo v${i} > ${tag}_${i}.txt`;
    want.set(`${tag}_${i}.txt`, `v${i}\n`);
    if (i % 4 === 0) {
      // Changed by a rename over it, as editors and corral's own applies do.
      code += ` && echo changed${i} > t_${tag} && mv t_${tag} ${tag}_${i - 2}.txt`;
      want.set(`${tag}_${i - 2}.txt`, `changed${i}\n`);
    }
    if (i % 5 === 0) {
      code += ` && rm ${tag}_${i - 1}.txt`;
      want.set(`${tag}_${i - 1}.txt`, null);
    }
    const r = await _call(b, "RunBashCode", { code });
    assert.equal(_json(r).success, true, textOf(r));
  }
  return want;
}

/** What A's state server holds and sees. */
async function _stateOf(a: Client, names: string[]) {
  const value = _json(await _call(a, "recall_value")).value;
  const id = _json(await _call(a, "server_id")).id;
  const look = await _call(a, "look_files", { names });
  assert.equal((look.structuredContent as { stale_view?: string })?.stale_view, undefined);
  return { value, id, look: _json(look) };
}

/**
 * A copy of the state server's view file published by `corral`, in a folder named for a corral
 * process that has ended: what a corral killed outright leaves until the next one sweeps it.
 */
async function _goneView(l: HostedLayout, corral: number): Promise<{ dir: string; pid: number }> {
  const ended = new Deno.Command("true").spawn();
  await ended.status;
  // corral's layers: in its config folder when its cache is off (as here), else the usual places.
  const bases = [join(l.config, "layers"), ...layerBases()];
  for (const base of bases) {
    const sandboxes = join(base, "sandboxes");
    let dirs: string[] = [];
    try {
      dirs = [...Deno.readDirSync(sandboxes)].map((d) => join(sandboxes, d.name));
    } catch { /* not this base */ }
    for (const d of dirs) {
      let view: { label?: string; corral?: number };
      try {
        view = JSON.parse(await Deno.readTextFile(join(d, "view.json")));
      } catch {
        continue;
      }
      if (view.label !== "state" || view.corral !== corral) continue;
      const dir = join(sandboxes, `${ended.pid}-gone`);
      await Deno.mkdir(dir);
      await Deno.writeTextFile(
        join(dir, "view.json"),
        JSON.stringify({ ...view, corral: ended.pid }),
      );
      return { dir, pid: ended.pid };
    }
  }
  throw new Error(`no view published by corral ${corral} under ${bases.join(", ")}`);
}

/** `corral servers`, text and JSON: `corral`'s servers run, each view current and refreshed. */
async function _servers(l: HostedLayout, corral: number): Promise<void> {
  const spawn = hostedMcpSpawn(l);
  const args = spawn.args.slice(0, spawn.args.indexOf("mcp"));
  const common = ["--workspace", l.ws, "--config", join(l.base, "corral.json")];
  const run = async (json: boolean) => {
    const out = await new Deno.Command(spawn.command, {
      args: [...args, "servers", ...(json ? ["--json"] : []), ...common],
      env: spawn.env,
      cwd: spawn.cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert.ok(out.success, `corral servers: ${text}${new TextDecoder().decode(out.stderr)}`);
    return text;
  };
  type Row = { name: string; running: Array<{ corral: number; refreshes: number; view: string }> };
  // A view left behind by a corral that is gone (killed outright) beside the live ones: not shown.
  const gone = await _goneView(l, corral);
  let rows: Row[];
  try {
    rows = JSON.parse(await run(true));
  } finally {
    // corral servers' own start may have swept it already (its corral is gone): either way, unseen.
    await Deno.remove(gone.dir, { recursive: true }).catch(() => {});
  }
  for (const r of rows) assert.ok(!r.running.some((v) => v.corral === gone.pid), JSON.stringify(r));
  for (const name of ["state", "thinking"]) {
    const mine = rows.find((r) => r.name === name)?.running.filter((v) => v.corral === corral);
    // A's server (and B's, where B started one) runs in that corral, its view current; A's
    // was refreshed after B's writes.
    assert.ok(mine?.length, `${name}: ${JSON.stringify(rows)}`);
    for (const v of mine!) assert.equal(v.view, "current", `${name}: ${JSON.stringify(v)}`);
    assert.ok(
      mine!.some((v) => v.refreshes > 0),
      `${name}: never refreshed: ${JSON.stringify(mine)}`,
    );
  }
  assert.match(
    await run(false),
    new RegExp(`running in corral ${corral}: view of the workspace current`),
  );
}

Deno.test("two stdio and two HTTP sessions: B writes 20 times, A keeps its servers' state and sees B's files", async () => {
  await using l = await hostedLayout();
  await Deno.writeTextFile(join(l.ws, "seed.txt"), "seed\n");
  await _setup(l);
  const stdioA = await _stdio(l, "stdio-a");
  const stdioB = await _stdio(l, "stdio-b");
  const http = await _http(l);
  const httpA = await _httpClient(http.url, "http-a");
  const httpB = await _httpClient(http.url, "http-b");
  const sessions = { stdio: [stdioA, stdioB], http: [httpA, httpB] } as const;
  try {
    const names = ["stdio", "http"].flatMap((t) =>
      Array.from({ length: WRITES }, (_, i) => `${t}_${i + 1}.txt`)
    );
    const before = new Map<Client, { id: string }>();
    for (const [tag, [a, b]] of Object.entries(sessions)) {
      // Every session hosts both servers; A's hold a value and a first thought.
      for (const c of [a, b]) await _call(c, "server_id");
      await _call(a, "remember_value", { value: `held by ${tag} A` });
      assert.equal(await _think(a, 1), 1);
      // A looks the names up before they exist: the kernel would keep them missing.
      const first = await _stateOf(a, names);
      assert.deepEqual(first.look.found[`${tag}_7.txt`], { relative: null, absolute: null });
      assert.deepEqual(first.look.listed, ["seed.txt"]);
      before.set(a, { id: first.id });
    }
    const want = new Map<string, string | null>();
    for (const [tag, [, b]] of Object.entries(sessions)) {
      for (const [k, v] of await _writes(b, tag)) want.set(k, v);
    }
    for (const [tag, [a]] of Object.entries(sessions)) {
      const now = await _stateOf(a, names);
      assert.equal(now.value, `held by ${tag} A`, `${tag}: A's server kept its value`);
      assert.equal(now.id, before.get(a)!.id, `${tag}: A's server is the same process`);
      for (const [name, content] of want) {
        assert.deepEqual(
          now.look.found[name],
          { relative: content, absolute: content },
          `${tag} A sees ${name}`,
        );
      }
      const present = [...want].filter(([, v]) => v !== null).map(([k]) => k);
      assert.deepEqual(now.look.listed, [...present, "seed.txt"].sort(), `${tag} A's listing`);
      assert.equal(await _think(a, 2), 2, `${tag}: A's thoughts were kept`);
    }
    // `corral servers` (another process) shows the HTTP corral's servers and their views.
    await _servers(l, http.child.pid);
  } finally {
    for (const c of [stdioA, stdioB, httpA, httpB]) await c.close().catch(() => {});
    http.child.kill("SIGTERM");
    await http.child.status;
  }
});
