// The audit answers questions (issue 22): every call line names who called
// (identity, session), how the call ended (success, failure, error, denied,
// with a reason) and how long it took; arguments are kept as their shape
// unless the policy says "values"; `corral audit` filters by identity, tool,
// outcome and time. Each outcome is produced for real, through the command
// line and through `corral mcp` over HTTP with two sessions.
import assert from "node:assert/strict";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { AuditRecord } from "../../../core/audit/mod.ts";
import { parsePolicy } from "../../../core/config/policy.ts";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { ResolvedIdentity } from "../../../core/identity/identity_policy.ts";
import { ToolAccess } from "../../../core/identity/tool_access.ts";
import { identityRegistry } from "../../../core/mcp/http_identity.ts";
import type { GateCaller } from "../../../core/mcp/_call_gate.ts";
import { createMcpServer, type McpRegistry } from "../../../core/mcp/mcp_server.ts";
import { fixtureRegistry, FIXTURES } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";
import { startHttpCorral, tempWorkspace } from "../../_mcp_helpers.ts";

const TOOLS = `${FIXTURES}audit`;
const SECRET = "VALUE-SECRET-7f3a";

async function _lines(path: string): Promise<AuditRecord[]> {
  const text = await Deno.readTextFile(path);
  return text.trimEnd().split("\n").map((l) => JSON.parse(l));
}

/** permissions.json for the fixture plugin: short time and memory limits, one tool never allowed. */
async function _policy(dir: string, auditArgs?: "values" | "shape"): Promise<string> {
  const path = join(dir, `permissions-${auditArgs ?? "none"}.json`);
  const entry = {
    // Long enough for the hog to run out of memory on a loaded machine before its time is up.
    timeout_ms: 5000,
    memory_mb: 64,
    ...(auditArgs ? { audit_args: auditArgs } : {}),
  };
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      plugins: { default: entry },
      tools: { AuditNever: { confirm: "never" } },
    }),
  );
  return path;
}

/** Each way a call ends, and the outcome and reason its line must hold. */
const CASES: Array<[string, Record<string, unknown>, string, string | undefined]> = [
  ["AuditEcho", { value: SECRET, note: "hello" }, "success", undefined],
  ["AuditFail", {}, "failure", undefined],
  ["AuditThrow", {}, "error", "threw"],
  ["AuditHog", {}, "error", "crashed"],
  ["AuditSleep", { ms: 20_000 }, "error", "timeout"],
  ["AuditNever", {}, "denied", "policy"],
  ["AuditWipe", {}, "denied", "confirmation"],
  ["AuditEcho", { value: 1, note: 5 }, "denied", "arguments"],
];

Deno.test("corral call: every outcome for real, as the local identity, shape-only by default; corral audit filters", async () => {
  const { ws, base } = await tempLayout();
  const audit = join(base, "audit.jsonl");
  const policy = await _policy(base);
  const env = { CORRAL_TOOL_DIRS: TOOLS };
  for (const [tool, args] of CASES) {
    const r = await runCli(
      ["call", tool, "--permissions", policy, "--audit", audit, "--args", JSON.stringify(args)],
      { cwd: ws, env },
    );
    assert.notEqual(r.code, 2, `${tool}: ${r.stderr}`);
  }
  const lines = await _lines(audit);
  assert.deepEqual(
    lines.map((l) => [l.tool, l.outcome, l.reason]),
    CASES.map(([tool, , outcome, reason]) => [tool, outcome, reason]),
  );
  for (const l of lines) {
    assert.equal(l.identity, "local");
    assert.equal(l.session, "local");
    assert.equal(typeof l.duration_ms, "number");
    assert.ok(l.duration_ms >= 0);
    assert.equal(typeof l.args_bytes, "number");
    assert.equal("args" in l, false, "no values without audit_args: values");
  }
  // The timeout took its time limit; the shape names types and lengths, never the value.
  assert.ok(lines[4].duration_ms >= 4900, `timeout after ${lines[4].duration_ms} ms`);
  assert.deepEqual(lines[0].args_shape, { value: `string(${SECRET.length})`, note: "string(5)" });
  assert.equal(lines[0].args_bytes, JSON.stringify({ note: "hello", value: SECRET }).length);
  assert.ok(!(await Deno.readTextFile(audit)).includes(SECRET));

  // corral audit: the filters, one by one and together.
  const json = async (...filters: string[]) => {
    const r = await runCli(["audit", audit, "--json", ...filters], { cwd: ws });
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim() ? r.stdout.trim().split("\n").map((l) => JSON.parse(l)) : [];
  };
  assert.equal((await json()).length, CASES.length);
  assert.deepEqual((await json("--outcome", "denied")).map((l) => l.reason), [
    "policy",
    "confirmation",
    "arguments",
  ]);
  assert.deepEqual((await json("--outcome", "error", "--tool", "AuditThrow")).length, 1);
  assert.equal((await json("--identity", "local", "--since", "1h")).length, CASES.length);
  assert.equal((await json("--identity", "alice")).length, 0);
  assert.equal((await json("--until", "1h")).length, 0, "nothing is older than an hour");
  const middle = lines[3].time;
  const before = await json("--until", middle);
  const after = await json("--since", middle);
  assert.equal(before.length + after.length, CASES.length);
  assert.ok(before.every((l) => l.time < middle) && after.every((l) => l.time >= middle));
  // The summary has one column per outcome.
  const summary = await runCli(["audit", audit, "--tool", "AuditEcho"], { cwd: ws });
  const rows = summary.stdout.trim().split("\n").map((l) => l.trim().split(/\s+/));
  assert.deepEqual(rows[0], ["tool", "calls", "success", "failure", "error", "denied", "p50_ms"]);
  assert.deepEqual(rows[1].slice(0, 6), ["AuditEcho", "2", "1", "0", "0", "1"]);
  // Bad values are usage errors naming the option; an outcome gets "did you mean".
  const deny = await runCli(["audit", audit, "--outcome", "deny"], { cwd: ws });
  assert.equal(deny.code, 2);
  assert.match(deny.stderr, /--outcome must be one of success, failure, error, denied/);
  assert.match(deny.stderr, /did you mean "denied"/);
  const ok = await runCli(["audit", audit, "--outcome", "ok"], { cwd: ws });
  assert.match(ok.stderr, /did you mean "success"/);
  const until = await runCli(["audit", audit, "--until", "tomorrow"], { cwd: ws });
  assert.equal(until.code, 2);
  assert.match(until.stderr, /--until must be an ISO time or a duration/);
  const help = await runCli(["help", "audit"], { cwd: ws });
  assert.match(help.stdout, /--identity NAME.*--outcome O.*--until T.*--json/);
});

Deno.test("audit_args: values keeps the values (secret-looking keys redacted); a typo gets did you mean", async () => {
  const { ws, base } = await tempLayout();
  const audit = join(base, "audit.jsonl");
  const policy = await _policy(base, "values");
  const r = await runCli(
    [
      "call",
      "AuditEcho",
      "--permissions",
      policy,
      "--audit",
      audit,
      "--args",
      JSON.stringify({ value: { shown: SECRET, api_key: "KEY-SECRET-1" } }),
    ],
    { cwd: ws, env: { CORRAL_TOOL_DIRS: TOOLS } },
  );
  assert.equal(r.code, 0, r.stderr);
  const [line] = await _lines(audit);
  assert.deepEqual(line.args, { value: { shown: SECRET, api_key: "[redacted]" } });
  assert.equal("args_shape" in line, false);
  assert.ok(!(await Deno.readTextFile(audit)).includes("KEY-SECRET-1"));
  assert.throws(
    () => parsePolicy('{"defaults": {"audit_args": "value"}}', "permissions.json", ws),
    /permissions\.json: defaults\.audit_args: .*\(did you mean "values"\?\)/,
  );
  assert.throws(
    () => parsePolicy('{"toolsets": {"files": {"audit_arg": "shape"}}}', "permissions.json", ws),
    /unknown key "audit_arg" \(did you mean "audit_args"\?\)/,
  );
  const p = parsePolicy('{"defaults": {"audit_args": "values"}}', "permissions.json", ws);
  assert.equal(p.toolset("files").audit_args, "values");
});

Deno.test("corral mcp over HTTP: two sessions, each line names its session; every outcome for real", async () => {
  await using ws = await tempWorkspace();
  const audit = join(ws.cache, "audit.jsonl");
  const policy = await _policy(ws.cache);
  await using corral = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--permissions", policy, "--audit", audit],
    ws,
    { CORRAL_TOOL_DIRS: TOOLS },
  );
  const a = new Client({ name: "audit-a", version: "1" });
  const b = new Client({ name: "audit-b", version: "1" });
  await a.connect(new StreamableHTTPClientTransport(new URL(corral.url)));
  await b.connect(new StreamableHTTPClientTransport(new URL(corral.url)));
  try {
    // Session A runs every case; session B one call of its own.
    for (const [tool, args] of CASES) {
      await a.callTool({ name: tool, arguments: args }).catch((err: unknown) => {
        // Bad arguments may be refused as a protocol error: still one audit line.
        assert.match(String(err), /invalid|argument/i);
      });
    }
    // A tool that does not exist is refused before the registry: still a line, denied.
    await assert.rejects(a.callTool({ name: "NoSuchTool", arguments: {} }), /Unknown tool/);
    const mine = await b.callTool({ name: "AuditFail", arguments: {} });
    assert.equal(mine.isError, true);
  } finally {
    await a.close();
    await b.close();
  }
  const lines = await _lines(audit);
  const calls = lines.filter((l) => !(l as { kind?: string }).kind);
  assert.deepEqual(
    calls.map((l) => [l.tool, l.outcome, l.reason]),
    [
      ...CASES.map(([tool, , outcome, reason]) => [tool, outcome, reason]),
      ["NoSuchTool", "denied", "unknown_tool"],
      ["AuditFail", "failure", undefined],
    ],
  );
  const sessionA = calls[0].session;
  const sessionB = calls.at(-1)!.session;
  assert.ok(sessionA && sessionB && sessionA !== sessionB, `${sessionA} vs ${sessionB}`);
  assert.ok(sessionA !== "local" && sessionB !== "local");
  assert.ok(calls.slice(0, CASES.length + 1).every((l) => l.session === sessionA));
  for (const l of calls) {
    assert.equal(typeof l.identity, "string");
    assert.ok(l.identity.length > 0);
    assert.equal(typeof l.duration_ms, "number");
  }
  // corral audit finds session B's one call among them by its outcome and tool.
  const r = await runCli(["audit", audit, "--json", "--outcome", "failure"], { cwd: ws.dir });
  const found = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(found.map((l) => l.session), [sessionA, sessionB]);
});

Deno.test("two identities through the MCP server: lines name each one; refusals before the registry (limits, a tool it may not use) are denied lines too", async () => {
  const { ws, base } = await tempLayout();
  const audit = join(base, "audit.jsonl");
  const { registry } = await fixtureRegistry(
    [`${TOOLS}/audit_tools.ts`],
    { timeout_ms: 5000 },
    ws,
    {},
    { auditPath: audit },
  );
  const identity = (name: string, deny: string[], concurrent?: number): ResolvedIdentity => ({
    name,
    access: new ToolAccess({ tools: { deny }, toolsets: { deny: [] } }),
    workspace: ws,
    limits: { concurrent },
  });
  const connect = async (view: McpRegistry, caller?: GateCaller) => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createMcpServer(view, { caller }).connect(serverSide);
    const client = new Client({ name: "audit-identity", version: "1" });
    await client.connect(clientSide);
    return client;
  };
  // Alice's caps at the gate: one call at once and none waiting (identities.alice.limits).
  const alice = await connect(identityRegistry(registry, identity("alice", [], 1)), {
    key: "alice",
    maxRunning: 1,
    maxQueued: 0,
  });
  const bob = await connect(identityRegistry(registry, identity("bob", ["AuditEcho"])));
  try {
    // Alice: one call running, a second at once is over her limit.
    const slow = alice.callTool({ name: "AuditSleep", arguments: { ms: 3000 } });
    await new Promise((r) => setTimeout(r, 200));
    const over = await alice.callTool({ name: "AuditFail", arguments: {} });
    assert.match(JSON.stringify(over), /already has 1 calls running/);
    assert.equal((await slow).isError, false);
    // Bob may not use AuditEcho: for him it does not exist.
    await assert.rejects(bob.callTool({ name: "AuditEcho", arguments: { value: 1 } }));
    assert.equal((await bob.callTool({ name: "AuditFail", arguments: {} })).isError, true);
  } finally {
    await alice.close();
    await bob.close();
    await registry.close();
  }
  const calls = (await _lines(audit)).filter((l) => !(l as { kind?: string }).kind);
  const rows = calls.map((l) => [l.identity, l.tool, l.outcome, l.reason ?? null]);
  assert.deepEqual(rows.sort(), [
    ["alice", "AuditFail", "denied", "limits"],
    ["alice", "AuditSleep", "success", null],
    ["bob", "AuditEcho", "denied", "unknown_tool"],
    ["bob", "AuditFail", "failure", null],
  ]);
  const sessions = (who: string) =>
    new Set(calls.filter((l) => l.identity === who).map((l) => l.session));
  assert.equal(sessions("alice").size, 1);
  assert.equal(sessions("bob").size, 1);
  assert.notDeepEqual([...sessions("alice")], [...sessions("bob")]);
});
