// The audit trail and the redaction of secrets and host paths, end to end.
import assert from "node:assert/strict";
import { type AuditRecord, digestArgs } from "../../../core/audit/mod.ts";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry, type ToolsetSource } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { FIXTURES } from "../../../testing/mod.ts";
import { runCli, tempLayout } from "../../_helpers.ts";

const SECRET = "tok-9f8e7d6c5b4a";

async function _registry(
  ws: string,
  fixture: Record<string, unknown>,
  options: {
    auditPath?: string;
    sources?: (policy: ReturnType<typeof parsePolicy>) => ToolsetSource[];
  } = {},
): Promise<{ registry: Registry; lines: string[] }> {
  const lines: string[] = [];
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { fixture } }),
    "test.json",
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    noBuiltins: true,
    cacheDir: null,
    auditPath: options.auditPath,
    reporter: new Reporter({ sink: (t) => lines.push(t), color: false }),
    sources: options.sources?.(policy) ?? [{
      id: "fixture",
      kind: "builtin",
      modules: [`${FIXTURES}sandbox/misbehaving_tools.ts`],
      policy: policy.toolset("fixture"),
    }],
  });
  return { registry, lines };
}

async function _records(path: string): Promise<AuditRecord[]> {
  const text = await Deno.readTextFile(path);
  assert.ok(text.endsWith("\n"));
  return text.trimEnd().split("\n").map((l) => JSON.parse(l));
}

Deno.test("200 concurrent calls from two registries append 400 whole, parseable audit lines", async () => {
  const { ws, base } = await tempLayout();
  const audit = `${base}/audit.jsonl`;
  // Values, not only their shape: the test reads each line's own argument back.
  const a = await _registry(ws, { audit_args: "values" }, { auditPath: audit });
  const b = await _registry(ws, { audit_args: "values" }, { auditPath: audit });
  try {
    const big = "z".repeat(20_000); // long lines: an interleaved write would break JSON
    const calls = [];
    for (let i = 0; i < 200; i++) {
      calls.push(a.registry.call("Echo", { value: `${i}-${big}` }));
      calls.push(b.registry.call("Echo", { value: `${i}-${big}` }));
    }
    const results = await Promise.all(calls);
    assert.ok(results.every((r) => r.success));
    const records = await _records(audit);
    assert.equal(records.length, 400);
    const seen = new Set(records.map((r) => (r.args as { value: string }).value.split("-")[0]));
    assert.equal(seen.size, 200);
    for (const r of records) {
      assert.equal(r.tool, "Echo");
      assert.equal(r.outcome, "success");
      assert.equal(r.args_sha256, await digestArgs(r.args));
      assert.equal(typeof r.duration_ms, "number");
    }
  } finally {
    await a.registry.close();
    await b.registry.close();
  }
});

Deno.test("audit lines hold the grant, isolation, digest and the outcome of each kind of call", async () => {
  const { ws, base } = await tempLayout();
  const audit = `${base}/audit.jsonl`;
  const { registry } = await _registry(ws, { timeout_ms: 2000 }, { auditPath: audit });
  try {
    await registry.call("Echo", { value: 1 });
    await registry.call("Sleep", { ms: 5000 });
    await registry.call("Echo", { value: "x", delay_ms: "not a number" });
    await assert.rejects(registry.call("NoSuchTool", {}), TypeError);
    const records = await _records(audit);
    assert.deepEqual(
      records.map((r) => [r.tool, r.outcome, r.reason]),
      [
        ["Echo", "success", undefined],
        ["Sleep", "error", "timeout"],
        ["Echo", "denied", "arguments"],
        ["NoSuchTool", "denied", "unknown_tool"],
      ],
    );
    const first = records[0];
    assert.equal(first.toolset, "fixture");
    assert.equal(first.source, "builtin");
    assert.equal(first.isolation, "process");
    assert.deepEqual(first.args_shape, { value: "number" }, "the shape, not the value");
    assert.equal("args" in first, false);
    assert.equal(first.identity, "local");
    assert.equal(first.args_sha256, await digestArgs({ value: 1 }));
    assert.ok(first.grant && Array.isArray(first.grant.read));
    assert.ok(!Number.isNaN(Date.parse(first.time)));
    assert.match(records[1].error!, /timed out/);
  } finally {
    await registry.close();
  }
});

Deno.test("a refused call is audited as denied and a dead process sandbox as an error (crashed)", async () => {
  const { ws, base } = await tempLayout();
  const audit = `${base}/audit.jsonl`;
  const { registry } = await _registry(ws, { isolation: "process", memory_mb: 32 }, {
    auditPath: audit,
  });
  try {
    await registry.call("Hog", {}); // runs out of its 32 MB: the child process dies
    const records = await _records(audit);
    assert.equal(records.at(-1)!.outcome, "error", records.at(-1)!.error);
    assert.equal(records.at(-1)!.reason, "crashed");
  } finally {
    await registry.close();
  }
  // A tool the host's letters do not allow (started with no letters at all).
  const policy = parsePolicy(JSON.stringify({ toolsets: { fixture: {} } }), "t.json", ws);
  const denied = await Registry.create({
    workspace: ws,
    policy,
    noBuiltins: true,
    cacheDir: null,
    privileges: "",
    auditPath: audit,
    reporter: new Reporter({ sink: () => {}, color: false }),
    sources: [{
      id: "fixture",
      kind: "builtin",
      modules: [`${FIXTURES}jail/direct_run.ts`],
      policy: policy.toolset("fixture"),
    }],
  });
  try {
    const res = await denied.call("DirectRun", { code: "true" });
    assert.match(res.error!, /not loaded: needs x/);
    assert.equal((await _records(audit)).at(-1)!.outcome, "denied");
  } finally {
    await denied.close();
  }
});

Deno.test("secret-looking argument keys are redacted in audit lines; redact_args drops the arguments", async () => {
  const { ws, base } = await tempLayout();
  const audit = `${base}/audit.jsonl`;
  const plain = await _registry(ws, { audit_args: "values" }, { auditPath: audit });
  const quiet = await _registry(ws, { redact_args: true, audit_args: "values" }, {
    auditPath: audit,
  });
  try {
    await plain.registry.call("Echo", { value: { api_key: "ARG-SECRET-1", note: "hi" } });
    await quiet.registry.call("Echo", { value: "ARG-SECRET-2" });
    const text = await Deno.readTextFile(audit);
    assert.ok(!text.includes("ARG-SECRET-1") && !text.includes("ARG-SECRET-2"));
    const [one, two] = await _records(audit);
    assert.deepEqual(one.args, { value: { api_key: "[redacted]", note: "hi" } });
    assert.equal(
      one.args_sha256,
      await digestArgs({ value: { api_key: "ARG-SECRET-1", note: "hi" } }),
      "the digest is of the real arguments",
    );
    assert.equal("args" in two, false);
    assert.equal("args_shape" in two, false, "redact_args: not even the shape");
    assert.equal(two.args_sha256, await digestArgs({ value: "ARG-SECRET-2" }));
  } finally {
    await plain.registry.close();
    await quiet.registry.close();
  }
});

Deno.test("a config secret never appears in list, logs, problems, results, errors or audit lines", async () => {
  const { ws, base } = await tempLayout();
  const audit = `${base}/audit.jsonl`;
  for (const isolation of ["worker", "process"] as const) {
    const { registry, lines } = await _registry(ws, {}, {
      auditPath: audit,
      sources: (policy) => [{
        id: "plugin:secrets",
        kind: "plugin",
        modules: [`${FIXTURES}secrets/secret_tools.ts`, `${FIXTURES}secrets/setup_throws.ts`],
        policy: { ...policy.plugin("secrets"), isolation },
        config: { api_token: SECRET, name: "visible" },
      }],
    });
    try {
      const leak = await registry.call("Leak", {});
      const ret = await registry.call("Return", {});
      assert.equal(leak.success, false);
      assert.match(leak.error!, /bad token \[redacted\]/);
      assert.equal(ret.echoed, "token=[redacted]");
      // Host paths outside the workspace are cut to their last name.
      assert.match(leak.error!, /read from …\/creds\.json/);
      assert.doesNotMatch(leak.error!, /\/root\/\.config/);
      assert.ok(registry.problems.length > 0, "setup_throws.ts is reported");
      const everything = JSON.stringify({
        list: registry.list(),
        problems: registry.problems,
        warnings: registry.warnings,
        lines,
        leak,
        ret,
        audit: await Deno.readTextFile(audit),
      });
      assert.ok(!everything.includes(SECRET), `${isolation}: the secret leaked`);
      assert.match(everything, /\[redacted\]/);
    } finally {
      await registry.close();
    }
  }
});

Deno.test("corral --audit logs a call and corral audit summarises it per tool", async () => {
  const { ws, base } = await tempLayout();
  const audit = `${base}/cli-audit.jsonl`;
  await Deno.writeTextFile(`${ws}/a.txt`, "one two three");
  const call = await runCli([
    "call",
    "WordCount",
    "-r",
    "--audit",
    audit,
    "--args",
    '{"filepath":"a.txt"}',
  ], {
    cwd: ws,
  });
  assert.equal(call.code, 0, call.stderr);
  const bad = await runCli([
    "call",
    "ReadFile",
    "-r",
    "--audit",
    audit,
    "--args",
    '{"filepath":"/etc/hostname"}',
  ], {
    cwd: ws,
  });
  assert.equal(bad.code, 1);
  const [first, second] = await _records(audit);
  assert.equal(first.tool, "WordCount");
  assert.equal(first.outcome, "success");
  assert.equal(second.outcome, "denied");
  const summary = await runCli(["audit", audit], { cwd: ws });
  assert.equal(summary.code, 0, summary.stderr);
  const rows = summary.stdout.trim().split("\n").map((l) => l.trim().split(/\s+/));
  assert.deepEqual(rows[0], ["tool", "calls", "success", "failure", "error", "denied", "p50_ms"]);
  assert.deepEqual(rows.find((r) => r[0] === "ReadFile")!.slice(1, 6), ["1", "0", "0", "0", "1"]);
  assert.deepEqual(rows.find((r) => r[0] === "WordCount")!.slice(1, 6), ["1", "1", "0", "0", "0"]);
  const only = await runCli(["audit", audit, "--tool", "WordCount", "--since", "1h"], { cwd: ws });
  assert.equal(only.stdout.trim().split("\n").length, 2);
  const future = await runCli(["audit", audit, "--since", "2999-01-01T00:00:00Z"], { cwd: ws });
  assert.equal(future.stdout.trim(), "no calls");
  const usage = await runCli(["audit", audit, "--since", "yesterday-ish"], { cwd: ws });
  assert.equal(usage.code, 2);
});

Deno.test("the audit log can be turned on by the config's audit key", async () => {
  const { ws } = await tempLayout();
  await Deno.writeTextFile(`${ws}/a.txt`, "one two");
  await Deno.writeTextFile(`${ws}/corral.json`, JSON.stringify({ audit: "logs/audit.jsonl" }));
  await Deno.mkdir(`${ws}/logs`);
  const call = await runCli(
    [
      "call",
      "WordCount",
      "--args",
      '{"filepath":"a.txt"}',
      "--workspace",
      ws,
      "--config",
      `${ws}/corral.json`,
    ],
    { cwd: ws },
  );
  assert.equal(call.code, 0, call.stderr);
  const lines = (await Deno.readTextFile(`${ws}/logs/audit.jsonl`)).trim().split("\n");
  assert.equal(lines.length, 1);
  const record = JSON.parse(lines[0]) as AuditRecord;
  assert.equal(record.tool, "WordCount");
  assert.equal(record.outcome, "success");
});
