// The audit log against callers who try to fill or forge it: huge strings
// are capped, a flood of refusals is counted (not written line by line), the
// file rotates at its total, and the summary prints each field escaped.
import assert from "node:assert/strict";
import { AuditLog, rotatedPaths } from "./audit.ts";
import { formatAuditSummary, readAudit, summarizeAudit } from "./audit_query.ts";
import type { AuditRecord } from "./audit_record.ts";

function _rec(tool: string, extra: Partial<AuditRecord> = {}): AuditRecord {
  return {
    time: new Date().toISOString(),
    identity: "mallory",
    session: "session:1",
    tool,
    toolset: "",
    source: "",
    letters: "",
    grant: null,
    isolation: "",
    args_sha256: "",
    duration_ms: 0,
    outcome: "denied",
    reason: "unknown_tool",
    ...extra,
  };
}

async function _size(path: string): Promise<number> {
  let total = 0;
  for (const p of [path, ...rotatedPaths(path)]) {
    try {
      total += (await Deno.stat(p)).size;
    } catch { /* not there */ }
  }
  return total;
}

Deno.test("audit: a 500 KB tool name, session or error is capped; the line stays small", async () => {
  const path = `${await Deno.makeTempDir()}/audit.jsonl`;
  const log = new AuditLog(path);
  const huge = "T".repeat(500_000);
  await log.append(_rec(huge, { session: "S".repeat(30_000), error: "E".repeat(500_000) }));
  const text = await Deno.readTextFile(path);
  assert.ok(text.length < 4096, `the line is ${text.length} characters`);
  const [r] = (await readAudit(path)).records;
  assert.match(r.tool, /^T{256}…\[\+499744 chars\]$/);
  assert.match(r.error!, /^E{2048}…/);
});

Deno.test("audit: 20,000 refusals of one caller are two lines and a count, not 20,000 lines", async () => {
  const path = `${await Deno.makeTempDir()}/audit.jsonl`;
  const log = new AuditLog(path, { refusalWindowMs: 60_000 });
  for (let i = 0; i < 20_000; i++) {
    await log.refusal(
      { identity: "mallory", reason: "rate_limit", tool: `Tool${i % 50}` },
      () => _rec(`Tool${i % 50}`, { reason: "rate_limit" }),
    );
  }
  // Another caller's refusal is never swallowed by mallory's window.
  await log.refusal(
    { identity: "alice", reason: "rate_limit", tool: "ReadFile" },
    () => _rec("ReadFile", { identity: "alice", reason: "rate_limit" }),
  );
  assert.equal((await Deno.readTextFile(path)).trim().split("\n").length, 2);
  log.flush();
  const lines = (await Deno.readTextFile(path)).trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(lines.length, 3);
  const summary = lines.find((l) => l.kind === "refusals");
  assert.equal(summary.identity, "mallory");
  assert.equal(summary.count, 19_999);
  assert.ok(Object.keys(summary.tools).length <= 21, "at most 20 tools named, the rest summed");
  assert.equal(
    Object.values(summary.tools as Record<string, number>).reduce((a, b) => a + b, 0),
    19_999,
  );
  assert.ok((await Deno.stat(path)).size < 8 * 1024);
  // corral audit counts every refusal.
  const read = await readAudit(path, { identity: "mallory", outcome: "denied" });
  const rows = summarizeAudit(read.records, read.refusals);
  assert.equal(rows.reduce((a, r) => a + r.counts.denied, 0), 20_000);
});

Deno.test("audit: a window's count is written when the window ends, by itself", async () => {
  const path = `${await Deno.makeTempDir()}/audit.jsonl`;
  const log = new AuditLog(path, { refusalWindowMs: 200 });
  for (let i = 0; i < 5; i++) {
    await log.refusal({ identity: "m", reason: "limits", tool: "X" }, () => _rec("X"));
  }
  await new Promise((r) => setTimeout(r, 600));
  const lines = (await Deno.readTextFile(path)).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.kind ?? "call"), ["call", "refusals"]);
  assert.equal(lines[1].count, 4);
});

Deno.test("audit: the log rotates by size and its total stays under audit_max_bytes", async () => {
  const path = `${await Deno.makeTempDir()}/audit.jsonl`;
  const max = 20_000;
  const log = new AuditLog(path, { maxBytes: max });
  for (let i = 0; i < 2_000; i++) await log.append(_rec(`Tool${i}`, { outcome: "success" }));
  const line = (await Deno.readTextFile(path)).split("\n")[0].length + 1;
  assert.ok(await _size(path) <= max + line, `${await _size(path)} bytes on disk`);
  assert.ok((await Deno.stat(rotatedPaths(path)[3])).size > 0, "four rotated files kept");
  // The newest lines survive, in order, across the files.
  const tools = (await readAudit(path)).records.map((r) => r.tool);
  assert.equal(tools.at(-1), "Tool1999");
  const nums = tools.map((t) => Number(t.slice(4)));
  assert.deepEqual(nums, [...nums].sort((a, b) => a - b));
});

Deno.test("corral audit's summary: a tool name with a line feed is one escaped cell, never a row", () => {
  const forged = "ReadFile\nFAKE                   999      999      0      0       0       0";
  const rows = summarizeAudit([_rec(forged, { outcome: "success" })]);
  const table = formatAuditSummary(rows);
  assert.equal(table.split("\n").length, 2, table);
  assert.match(table, /ReadFile\\u000aFAKE/);
  assert.doesNotMatch(
    formatAuditSummary(summarizeAudit([_rec("a\u202eb\u009b")])),
    /[\u202e\u009b]/,
  );
});
