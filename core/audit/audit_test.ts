import assert from "node:assert/strict";
import { AuditLog } from "./audit.ts";
import { argShape, boundedJson, canonicalJson, digestArgs } from "./audit_line.ts";
import {
  formatAuditSummary,
  parseSince,
  parseTime,
  readAudit,
  summarizeAudit,
} from "./audit_query.ts";
import { type AuditRecord, classifyResult, outcomeOf } from "./audit_record.ts";
import { sha256Hex } from "../base/sha256_hex.ts";
import { failure, withFault } from "../tool/result.ts";

function _rec(
  tool: string,
  outcome: AuditRecord["outcome"],
  duration_ms: number,
  time = "2026-01-01T10:00:00Z",
  identity = "local",
): AuditRecord {
  return {
    time,
    identity,
    session: `s-${identity}`,
    tool,
    toolset: "t",
    source: "builtin",
    letters: "",
    grant: null,
    isolation: "worker",
    args_sha256: "",
    duration_ms,
    outcome,
  };
}

Deno.test("canonicalJson sorts keys at every level, so equal arguments share a digest", async () => {
  assert.equal(canonicalJson({ b: [{ y: 1, x: 2 }], a: null }), '{"a":null,"b":[{"x":2,"y":1}]}');
  assert.equal(
    await digestArgs({ a: 1, b: { c: 2, d: 3 } }),
    await digestArgs({ b: { d: 3, c: 2 }, a: 1 }),
  );
  assert.notEqual(await digestArgs({ a: 1 }), await digestArgs({ a: 2 }));
  assert.match(await digestArgs({}), /^[0-9a-f]{64}$/);
});

Deno.test("classifyResult tells success, failure, error and denied apart, with a reason", () => {
  const f = (reason: string) => ({ success: false, error: `Cannot run tool "T": ${reason}` });
  assert.deepEqual(classifyResult({ success: true }), { outcome: "success" });
  // The tool's own answer, whatever its words: failure.
  assert.deepEqual(classifyResult(f("the file is empty")), { outcome: "failure" });
  assert.deepEqual(classifyResult(f("sandbox crashed: boom")), { outcome: "failure" });
  // What corral marked: the mark decides (kept beside the object, never in its JSON).
  assert.deepEqual(classifyResult(withFault(failure("T", "boom"), "error", "threw")), {
    outcome: "error",
    reason: "threw",
  });
  assert.deepEqual(classifyResult(withFault(failure("T", "x"), "denied", "confirmation")), {
    outcome: "denied",
    reason: "confirmation",
  });
  // Words of a refusal or a timeout that carry no mark (a hosted server's, a built-in tool's).
  assert.deepEqual(classifyResult({ success: false, error: "x", timed_out: true }), {
    outcome: "error",
    reason: "timeout",
  });
  assert.equal(outcomeOf(f("timed out after 100 ms")), "error");
  assert.equal(outcomeOf(f('permission denied: path "x" is outside')), "denied");
  assert.equal(outcomeOf(f("refused by policy (permissions.json ...)")), "denied");
  assert.equal(outcomeOf(f("not loaded: needs x")), "denied");
  assert.equal(outcomeOf(f("needs confirmation: approve it")), "denied");
  assert.equal(outcomeOf(f("invalid arguments: x")), "denied");
  assert.equal(outcomeOf(f("arguments too deep: nested more than 64 levels")), "denied");
  assert.equal(outcomeOf(f("arguments too large: more than 1024 bytes")), "denied");
  // The mark never reaches JSON.
  assert.equal(
    JSON.stringify(withFault(failure("T", "x"), "error", "threw")).includes("threw"),
    false,
  );
});

Deno.test("argShape keeps types, keys and lengths, never a value, and bounds what it keeps", () => {
  const secret = "hunter2-SECRET";
  const { shape, truncated } = argShape({
    password: secret,
    n: 42,
    ok: true,
    none: null,
    list: [secret, 7, { deep: secret }],
  });
  assert.equal(truncated, false);
  assert.deepEqual(shape, {
    password: `string(${secret.length})`,
    n: "number",
    ok: "boolean",
    none: "null",
    list: {
      type: "array",
      length: 3,
      items: [`string(${secret.length})`, "number", { deep: `string(${secret.length})` }],
    },
  });
  assert.ok(!JSON.stringify(shape).includes(secret) && !JSON.stringify(shape).includes("42"));
  let deep: unknown = "x";
  for (let i = 0; i < 10_000; i++) deep = [deep];
  const many = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i]));
  for (const v of [deep, many, { list: Array(100_000).fill(1) }]) {
    const s = argShape(v);
    assert.equal(s.truncated, true);
    assert.ok(JSON.stringify(s.shape).length < 64 * 1024);
  }
});

Deno.test("the audit encoder never throws: 100,000 levels, cycles, bigints, functions, a 50 MB string", async () => {
  let deep: unknown = "x";
  for (let i = 0; i < 100_000; i++) deep = [deep];
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  const odd = { n: 10n, f: () => 1, s: Symbol("s"), u: undefined, d: new Date(0), inf: Infinity };
  for (const value of [deep, cyclic, odd, { s: "y".repeat(50_000_000) }]) {
    assert.equal(typeof canonicalJson(value), "string");
    assert.match(await digestArgs(value), /^[0-9a-f]{64}$/);
    const shown = boundedJson(value);
    const text = JSON.stringify(shown.value);
    assert.ok(text.length < 300 * 1024, `bounded: ${text.length} bytes`);
    JSON.parse(text);
  }
  assert.equal(canonicalJson(cyclic), '{"a":1,"self":"[cycle]"}');
  assert.equal(
    canonicalJson(odd),
    JSON.stringify({ d: "1970-01-01T00:00:00.000Z", inf: null, n: "10" }),
  );
  // The same text as JSON.stringify with sorted keys, for what JSON can hold.
  const plain = { b: [1, "two", null, { z: true, a: -0.5 }], a: { "é": '\n"' } };
  assert.equal(canonicalJson(plain), '{"a":{"é":"\\n\\""},"b":[1,"two",null,{"a":-0.5,"z":true}]}');
  // A record JSON.stringify refuses (a bigint) still makes a line, with a marker for its args.
  const path = await Deno.makeTempFile();
  const log = new AuditLog(path);
  for (const args of [deep, { n: 1n }]) {
    await log.append({
      time: "t",
      tool: "X",
      toolset: "t",
      source: "builtin",
      letters: "",
      grant: null,
      isolation: "worker",
      args_sha256: "",
      args,
      duration_ms: 1,
      outcome: "success",
      identity: "local",
      session: "local",
    });
  }
  const lines = (await Deno.readTextFile(path)).trimEnd().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.tool), ["X", "X"]);
  assert.equal(lines[1].args, "[unencodable]");
});

Deno.test("parseSince reads durations and ISO times and refuses anything else", () => {
  const now = new Date("2026-01-01T12:00:00Z");
  assert.equal(parseSince("30m", now).toISOString(), "2026-01-01T11:30:00.000Z");
  assert.equal(parseSince("2d", now).toISOString(), "2025-12-30T12:00:00.000Z");
  assert.equal(parseSince("2026-01-01T00:00:00Z").toISOString(), "2026-01-01T00:00:00.000Z");
  assert.throws(() => parseSince("soon"), TypeError);
  assert.throws(() => parseTime("5", "--until"), /--until must be an ISO time/);
  assert.equal(parseTime("1h", "--until", now).toISOString(), "2026-01-01T11:00:00.000Z");
});

Deno.test("AuditLog writes whole lines that readAudit filters by tool and time", async () => {
  const path = await Deno.makeTempFile();
  try {
    const log = new AuditLog(path);
    await Promise.all([
      log.append(_rec("A", "success", 1, "2026-01-01T10:00:00Z", "alice")),
      log.append({ ..._rec("B", "error", 2, "2026-01-01T11:00:00Z"), error: "line\nbreak" }),
      log.append(_rec("A", "failure", 3, "2026-01-01T12:00:00Z", "bob")),
    ]);
    await Deno.writeTextFile(path, "not json\n", { append: true });
    const text = await Deno.readTextFile(path);
    assert.equal(
      text.split("\n").length,
      5,
      "one line per record, the newline in an error is escaped",
    );
    const all = await readAudit(path);
    assert.equal(all.records.length, 3);
    assert.equal(all.bad, 1);
    assert.equal(all.records[1].error, "line\nbreak");
    assert.deepEqual((await readAudit(path, { tool: "A" })).records.map((r) => r.outcome), [
      "success",
      "failure",
    ]);
    const late = await readAudit(path, { since: new Date("2026-01-01T10:30:00Z") });
    assert.deepEqual(late.records.map((r) => r.tool), ["B", "A"]);
    const early = await readAudit(path, { until: new Date("2026-01-01T11:00:00Z") });
    assert.deepEqual(early.records.map((r) => r.identity), ["alice"], "until is exclusive");
    const bob = await readAudit(path, { identity: "bob", outcome: "failure" });
    assert.deepEqual(bob.records.map((r) => r.time), ["2026-01-01T12:00:00Z"]);
    assert.equal(
      (await readAudit(path, { identity: "bob", outcome: "success" })).records.length,
      0,
    );
    // Lines of older corrals read with today's outcomes, their detail kept as the reason.
    await Deno.writeTextFile(
      path,
      ['{"time":"t","tool":"C","outcome":"timeout"}', '{"time":"t","tool":"C","outcome":"ok"}']
        .join("\n"),
      { append: true },
    );
    const old = await readAudit(path, { tool: "C" });
    assert.deepEqual(old.records.map((r) => [r.outcome, r.reason]), [
      ["error", "timeout"],
      ["success", undefined],
    ]);
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("summarizeAudit counts outcomes and the median duration per tool", () => {
  const rows = summarizeAudit([
    _rec("B", "success", 10),
    _rec("A", "success", 5),
    _rec("A", "error", 1),
    _rec("A", "denied", 100),
    _rec("A", "error", 7),
  ]);
  assert.deepEqual(rows.map((r) => [r.tool, r.calls, r.p50_ms]), [["A", 4, 5], ["B", 1, 10]]);
  assert.deepEqual(rows[0].counts, { success: 1, failure: 0, error: 2, denied: 1 });
  const table = formatAuditSummary(rows).split("\n");
  assert.match(table[0], /^tool\s+calls\s+success\s+failure\s+error\s+denied\s+p50_ms$/);
  assert.match(table[1], /^A\s+4\s+1\s+0\s+2\s+1\s+5$/);
});

Deno.test("sha256Hex (synchronous) equals WebCrypto's SHA-256 on any bytes", async () => {
  let seed = 11;
  for (let n = 0; n < 300; n++) {
    const bytes = new Uint8Array(n * 7).map(() =>
      (seed = (seed * 1103515245 + 12345) % 2 ** 31) & 255
    );
    const web = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    const hex = Array.from(web, (b) => b.toString(16).padStart(2, "0")).join("");
    assert.equal(sha256Hex(bytes), hex, `${bytes.length} bytes`);
  }
});

Deno.test("AuditLog follows its path: a log rotated or removed gets the next line in a new file, a path turned folder refuses", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/audit.jsonl`;
  try {
    const log = new AuditLog(path);
    await log.check();
    await log.append(_rec("A", "success", 1));
    await Deno.rename(path, `${path}.1`); // rotated
    await log.check();
    await log.append(_rec("B", "success", 1));
    await Deno.remove(path); // removed
    await log.append(_rec("C", "success", 1));
    assert.deepEqual((await readAudit(`${path}.1`)).records.map((r) => r.tool), ["A"]);
    // readAudit reads the rotated file first, then the new one (B went with the removed file).
    assert.deepEqual((await readAudit(path)).records.map((r) => r.tool), ["A", "C"]);
    await Deno.remove(path);
    await Deno.mkdir(path); // no line can be appended: check and append both reject
    await assert.rejects(() => log.check());
    await assert.rejects(() => log.append(_rec("D", "success", 1)));
    await Deno.remove(path);
    // 1000 lines appended at once from two logs on one file: each whole, none lost.
    const other = new AuditLog(path);
    await Promise.all(
      Array.from(
        { length: 1000 },
        (_, i) => (i % 2 ? log : other).append(_rec(`T${i}`, "success", i)),
      ),
    );
    const lines = (await Deno.readTextFile(path)).split("\n").filter(Boolean);
    assert.equal(lines.length, 1000);
    assert.deepEqual(
      lines.map((l) => JSON.parse(l).tool),
      Array.from({ length: 1000 }, (_, i) => `T${i}`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
