// The audit cannot be evaded: arguments nested 10,000 levels deep, a 50 MB
// string and 400,000 keys are refused before any tool code
// runs (a canary the tool would write stays absent), through the library,
// the CLI, `corral mcp` over stdio and over HTTP; the refusal is an audit
// line that parses, and the host answers the next call.
import assert from "node:assert/strict";
import { join } from "node:path";
import { type AuditRecord, digestArgs } from "../../../core/audit/mod.ts";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { CORRAL_ARGS, FIXTURES, INIT_BODY, ROOT } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";
import { startHttpCorral, type TempWorkspace, tempWorkspace } from "../../_mcp_helpers.ts";

const TOOLS = `${FIXTURES}call_limits`;

function _deep(levels: number): unknown {
  let v: unknown = "bottom";
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

function _deepJson(levels: number): string {
  return `${'{"a":'.repeat(levels)}"bottom"${"}".repeat(levels)}`;
}

function _manyKeys(n: number): Record<string, number> {
  const o: Record<string, number> = {};
  for (let i = 0; i < n; i++) o[`k${i}`] = i;
  return o;
}

async function _records(path: string): Promise<AuditRecord[]> {
  const text = await Deno.readTextFile(path);
  assert.ok(text.endsWith("\n"));
  return text.trimEnd().split("\n").map((l) => JSON.parse(l)).filter((r) => !r.kind);
}

async function _absent(path: string): Promise<void> {
  await assert.rejects(Deno.stat(path), Deno.errors.NotFound, `${path} must not exist`);
}

async function _registry(ws: string, audit: string, limits: Record<string, unknown> = {}) {
  const lines: string[] = [];
  const policy = parsePolicy(
    // Values, bounded (not only their shape): the lines must stay short whatever the arguments.
    JSON.stringify({ toolsets: { fixture: { write: ["out"], audit_args: "values", ...limits } } }),
    "test-permissions.json",
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    noBuiltins: true,
    cacheDir: null,
    auditPath: audit,
    // Every refusal written in full (not counted per window): each attack's line is read below.
    auditLimits: { refusalWindowMs: 0 },
    reporter: new Reporter({ sink: (t) => lines.push(t), color: false }),
    sources: [{
      id: "fixture",
      kind: "builtin",
      modules: [`${TOOLS}/limit_tools.ts`],
      policy: policy.toolset("fixture"),
    }],
  });
  return { registry, lines };
}

Deno.test("deep, huge and many-keyed arguments are refused before the tool runs, audited as denied; the host still answers", async () => {
  const { ws, base } = await tempLayout();
  await Deno.mkdir(`${ws}/out`);
  const canary = `${ws}/out/canary.txt`;
  const audit = `${base}/audit.jsonl`;
  const { registry } = await _registry(ws, audit);
  try {
    const attacks: Array<[unknown, RegExp]> = [
      [
        { data: _deep(10_000) },
        /arguments too deep: nested more than 64 levels.*"max_arg_depth".*toolsets\.fixture/,
      ],
      [
        { data: "x".repeat(50_000_000) },
        /arguments too large: more than 4194304 bytes.*"max_arg_bytes"/,
      ],
      [{ data: _manyKeys(400_000) }, /arguments too large/],
    ];
    for (const [args, why] of attacks) {
      const res = await registry.call("KeepArgs", args);
      assert.equal(res.success, false);
      assert.match(res.error!, /^Cannot run tool "KeepArgs": /);
      assert.match(res.error!, why);
      await _absent(canary);
      const last = (await _records(audit)).at(-1)!;
      assert.equal(last.outcome, "denied");
      assert.equal(last.tool, "KeepArgs");
      assert.equal(last.args_truncated, true);
      assert.equal(last.args_sha256, await digestArgs(args));
    }
    // The audit file holds whole, short lines: nothing of 50 MB was copied into it.
    assert.ok((await Deno.stat(audit)).size < 3 * 300 * 1024);
    const ok = await registry.call("KeepArgs", { data: { a: [1, 2] } });
    assert.equal(ok.success, true, ok.error);
    assert.equal(await Deno.readTextFile(canary), "ran");
    assert.equal((await _records(audit)).at(-1)!.outcome, "success");
  } finally {
    await registry.close();
  }
});

Deno.test("the limits are the policy's: max_arg_depth and max_arg_bytes per toolset or in defaults, up to 1000 levels safely", async () => {
  const { ws, base } = await tempLayout();
  await Deno.mkdir(`${ws}/out`);
  const canary = `${ws}/out/canary.txt`;
  const audit = `${base}/audit.jsonl`;
  const { registry } = await _registry(ws, audit, { max_arg_depth: 8, max_arg_bytes: 2048 });
  try {
    const deep = await registry.call("KeepArgs", { data: _deep(8) });
    assert.match(deep.error!, /nested more than 8 levels/);
    const big = await registry.call("KeepArgs", { data: "y".repeat(3000) });
    assert.match(big.error!, /more than 2048 bytes/);
    await _absent(canary);
    const ok = await registry.call("KeepArgs", { data: _deep(6) });
    assert.equal(ok.success, true, ok.error);
  } finally {
    await registry.close();
  }
  // The largest depth the policy accepts travels, validates and is audited without a stack overflow.
  await Deno.remove(canary);
  const wide = await _registry(ws, audit, { max_arg_depth: 1000 });
  try {
    const ok = await wide.registry.call("KeepArgs", { data: _deep(998) });
    assert.equal(ok.success, true, ok.error);
    assert.equal(await Deno.readTextFile(canary), "ran");
    const last = (await _records(audit)).at(-1)!;
    assert.equal(last.outcome, "success");
    assert.equal(last.args_truncated, true);
  } finally {
    await wide.registry.close();
  }
  const viaDefaults = parsePolicy(
    JSON.stringify({ defaults: { max_arg_depth: 5 }, toolsets: { x: {} } }),
    "p.json",
    ws,
  );
  assert.equal(viaDefaults.toolset("x").max_arg_depth, 5);
  assert.throws(
    () => parsePolicy('{"toolsets":{"x":{"max_arg_dept":5}}}', "p.json", ws),
    /p\.json: toolsets\.x: unknown key "max_arg_dept" \(did you mean "max_arg_depth"\?\)/,
  );
  assert.throws(
    () => parsePolicy('{"defaults":{"max_arg_depth":100000}}', "p.json", ws),
    /p\.json: defaults\.max_arg_depth: Number must be less than or equal to 1000/,
  );
});

Deno.test("a required audit that stops being writable: the running call's lost line is reported, the next call does not run", async () => {
  const { ws, base } = await tempLayout();
  await Deno.mkdir(`${ws}/out`);
  const canary = `${ws}/out/canary.txt`;
  const audit = `${base}/audit.jsonl`;
  const { registry, lines } = await _registry(ws, audit);
  try {
    const running = registry.call("KeepArgs", { data: 1, ms: 1500 });
    await new Promise((r) => setTimeout(r, 500));
    await Deno.remove(audit).catch(() => {});
    await Deno.mkdir(audit); // the path is now a folder: no line can be appended
    const res = await running;
    assert.equal(res.success, true, res.error);
    assert.ok(
      lines.some((l) => /KeepArgs ran, but its audit line could not be written/.test(l)),
      lines.join("\n"),
    );
    await Deno.remove(canary);
    const refused = await registry.call("KeepArgs", { data: 2 });
    assert.equal(refused.success, false);
    assert.match(refused.error!, /refused: the audit log .* cannot be written/);
    await _absent(canary);
  } finally {
    await registry.close();
  }
});

/** A layout for the CLI and MCP: the plugin dir, a policy granting `out`, an audit path. */
async function _served(ws: string, base: string) {
  await Deno.mkdir(`${ws}/out`, { recursive: true });
  const policy = `${base}/permissions.json`;
  await Deno.writeTextFile(
    policy,
    JSON.stringify({ plugins: { limit_tools: { write: ["out"] }, default: {} } }),
  );
  return { policy, audit: `${base}/audit.jsonl`, canary: `${ws}/out/canary.txt` };
}

Deno.test("through the CLI: 10,000 levels in --args and 50 MB on stdin are refused and audited; the next call runs", async () => {
  const { ws, base } = await tempLayout();
  const { policy, audit, canary } = await _served(ws, base);
  const cli = (args: string, stdin?: string) =>
    runCli(
      ["call", "KeepArgs", "-w", "--permissions", policy, "--audit", audit, "--args", args],
      {
        cwd: ws,
        ...(stdin !== undefined ? { stdin } : {}),
        env: { CORRAL_TOOL_DIRS: TOOLS, CORRAL_CACHE_DIR: `${base}/cache` },
      },
    );
  const deep = await cli(`{"data":${_deepJson(10_000)}}`);
  assert.equal(deep.code, 1, deep.stderr);
  assert.match(deep.stdout, /arguments too deep: nested more than 64 levels/);
  await _absent(canary);
  const huge = await cli("-", JSON.stringify({ data: "z".repeat(50_000_000) }));
  assert.equal(huge.code, 1, huge.stderr);
  assert.match(huge.stdout, /arguments too large/);
  await _absent(canary);
  const records = await _records(audit);
  assert.deepEqual(records.map((r) => r.outcome), ["denied", "denied"]);
  const ok = await cli('{"data":"fine"}');
  assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  assert.equal(await Deno.readTextFile(canary), "ran");
});

/** Raw JSON-RPC lines to a `corral mcp` over stdio; answers by id. */
function _stdioCorral(ws: TempWorkspace, policy: string, audit: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      ...CORRAL_ARGS,
      "mcp",
      "-w",
      "--workspace",
      ws.dir,
      "--permissions",
      policy,
      "--audit",
      audit,
    ],
    env: {
      ...Deno.env.toObject(),
      NO_COLOR: "1",
      CORRAL_CACHE_DIR: ws.cache,
      CORRAL_CONFIG_DIR: join(ws.cache, "config"),
      CORRAL_TOOL_DIRS: TOOLS,
    },
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  const answers = new Map<number, (msg: Record<string, unknown>) => void>();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  (async () => {
    let buf = "";
    for (;;) {
      const { value, done } = await lines.read();
      if (done) return;
      buf += value;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const msg = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (typeof msg.id === "number") answers.get(msg.id)?.(msg);
      }
    }
  })();
  const enc = new TextEncoder();
  const send = (text: string) => writer.write(enc.encode(text + "\n"));
  const request = (id: number, body: string) => {
    const answer = new Promise<Record<string, unknown>>((r) => answers.set(id, r));
    return send(body).then(() => answer);
  };
  return {
    send,
    request,
    async close() {
      await writer.close().catch(() => {});
      await child.status;
    },
  };
}

function _call(id: number, argsJson: string): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"KeepArgs","arguments":${argsJson}}}`;
}

Deno.test("through corral mcp over stdio: a 10,000-level call is refused, a 50 MB message answered with an error, the server keeps serving", async () => {
  const ws = await tempWorkspace();
  const { policy, audit, canary } = await _served(ws.dir, ws.cache);
  const mcp = _stdioCorral(ws, policy, audit);
  try {
    const init = await mcp.request(
      1,
      INIT_BODY,
    );
    assert.ok(init.result);
    await mcp.send('{"jsonrpc":"2.0","method":"notifications/initialized"}');
    const deep = await mcp.request(2, _call(2, `{"data":${_deepJson(10_000)}}`));
    const deepResult = deep.result as { isError: boolean; content: Array<{ text: string }> };
    assert.equal(deepResult.isError, true);
    assert.match(deepResult.content[0].text, /arguments too deep/);
    const huge = await mcp.request(3, _call(3, JSON.stringify({ data: "q".repeat(50_000_000) })));
    assert.ok(huge.error, "an oversized message is answered with an error");
    await _absent(canary);
    const ok = await mcp.request(4, _call(4, '{"data":"fine"}'));
    assert.equal((ok.result as { isError: boolean }).isError, false);
    assert.equal(await Deno.readTextFile(canary), "ran");
  } finally {
    await mcp.close();
  }
  const outcomes = (await _records(audit)).map((r) => r.outcome);
  assert.deepEqual(outcomes, ["denied", "success"]);
  await ws[Symbol.asyncDispose]();
});

Deno.test("through corral mcp over HTTP: a 10,000-level call is refused and audited, 50 MB gets 413, the server keeps serving", async () => {
  const ws = await tempWorkspace();
  const { policy, audit, canary } = await _served(ws.dir, ws.cache);
  try {
    await using corral = await startHttpCorral(
      ["--http", "127.0.0.1:0", "--stateless", "--permissions", policy, "--audit", audit],
      ws,
      { CORRAL_TOOL_DIRS: TOOLS },
    );
    const post = (body: string) =>
      fetch(corral.url, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          Accept: "application/json, text/event-stream",
          "MCP-Protocol-Version": "2025-06-18",
        },
        body,
      });
    const deep = await post(_call(2, `{"data":${_deepJson(10_000)}}`));
    assert.equal(deep.status, 200);
    assert.match(await deep.text(), /arguments too deep/);
    const huge = await post(_call(3, JSON.stringify({ data: "h".repeat(50_000_000) })));
    assert.equal(huge.status, 413);
    await huge.body?.cancel();
    await _absent(canary);
    const ok = await post(_call(4, '{"data":"fine"}'));
    assert.equal(ok.status, 200);
    assert.match(await ok.text(), /"isError":false/);
    assert.equal(await Deno.readTextFile(canary), "ran");
  } finally {
    const outcomes = (await _records(audit)).map((r) => r.outcome);
    assert.deepEqual(outcomes, ["denied", "success"]);
    await ws[Symbol.asyncDispose]();
  }
});
