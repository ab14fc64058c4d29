import assert from "node:assert/strict";
import { capResult, failure, jsonBytesBound, normalizeResult, type ToolResult } from "./result.ts";

function _size(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value)).length;
}

Deno.test("failure builds the standard 'Cannot run tool' message and keeps extra fields", () => {
  assert.deepEqual(failure("ReadFile", "no such file", { path: "a.txt" }), {
    success: false,
    error: 'Cannot run tool "ReadFile": no such file',
    path: "a.txt",
  });
});

Deno.test("normalizeResult turns a string into {success:true, output}", () => {
  assert.deepEqual(normalizeResult("Echo", "hello"), { success: true, output: "hello" });
  assert.deepEqual(normalizeResult("Echo", ""), { success: true, output: "" });
});

Deno.test("normalizeResult adds success:true to an object without success", () => {
  assert.deepEqual(normalizeResult("Echo", { text: "hi", n: 1 }), {
    text: "hi",
    n: 1,
    success: true,
  });
});

Deno.test("normalizeResult keeps an explicit success:true object as it is", () => {
  assert.deepEqual(normalizeResult("Echo", { success: true, list: [1, "a", null] }), {
    success: true,
    list: [1, "a", null],
  });
});

Deno.test("normalizeResult turns a number, null, array, undefined or boolean into a failure naming the tool", () => {
  const cases: Array<[unknown, string]> = [
    [42, "number"],
    [null, "null"],
    [[1, 2], "an array"],
    [undefined, "undefined"],
    [true, "boolean"],
    [false, "boolean"],
  ];
  for (const [value, what] of cases) {
    assert.deepEqual(normalizeResult("X", value), {
      success: false,
      error: `Cannot run tool "X": it returned ${what}, not an object or a string`,
    });
  }
});

Deno.test("normalizeResult turns a symbol or a function return into a failure", () => {
  for (const value of [Symbol("s"), () => 1, 10n]) {
    const res = normalizeResult("X", value);
    assert.equal(res.success, false);
    assert.match(res.error!, /^Cannot run tool "X": it returned \w+, not an object or a string$/);
  }
});

Deno.test("normalizeResult turns a cycle into a failure naming the path", () => {
  const value: Record<string, unknown> = { a: { b: {} } };
  (value.a as { b: Record<string, unknown> }).b.back = value;
  assert.deepEqual(normalizeResult("X", value), {
    success: false,
    error: 'Cannot run tool "X": its result is not JSON: result.a.b.back is a circular reference',
  });
});

Deno.test("normalizeResult accepts the same object referenced twice (not a cycle)", () => {
  const shared = { v: 1 };
  assert.deepEqual(normalizeResult("X", { a: shared, b: shared, list: [shared, shared] }), {
    a: { v: 1 },
    b: { v: 1 },
    list: [{ v: 1 }, { v: 1 }],
    success: true,
  });
});

Deno.test("normalizeResult turns a BigInt into a failure naming the path", () => {
  assert.deepEqual(normalizeResult("X", { size: 10n }), {
    success: false,
    error: 'Cannot run tool "X": its result is not JSON: result.size is a BigInt',
  });
  assert.deepEqual(normalizeResult("X", { items: [1, { n: 2n }] }), {
    success: false,
    error: 'Cannot run tool "X": its result is not JSON: result.items[1].n is a BigInt',
  });
});

Deno.test("normalizeResult turns a function, also nested, into a failure naming the path", () => {
  assert.deepEqual(normalizeResult("X", { cb: () => 1 }), {
    success: false,
    error: 'Cannot run tool "X": its result is not JSON: result.cb is a function',
  });
  assert.deepEqual(normalizeResult("X", { deep: { list: [0, { fn() {} }] } }), {
    success: false,
    error: 'Cannot run tool "X": its result is not JSON: result.deep.list[1].fn is a function',
  });
});

Deno.test("normalizeResult turns NaN and Infinity into failures naming the path", () => {
  assert.deepEqual(normalizeResult("X", { ratio: NaN }), {
    success: false,
    error: 'Cannot run tool "X": its result is not JSON: result.ratio is NaN',
  });
  assert.deepEqual(normalizeResult("X", { list: [1, -Infinity] }), {
    success: false,
    error: 'Cannot run tool "X": its result is not JSON: result.list[1] is -Infinity',
  });
});

Deno.test("normalizeResult turns a symbol value into a failure naming the path", () => {
  assert.deepEqual(normalizeResult("X", { s: Symbol("s") }), {
    success: false,
    error: 'Cannot run tool "X": its result is not JSON: result.s is a symbol',
  });
});

Deno.test("normalizeResult drops undefined properties and serialises Dates like JSON does", () => {
  const when = new Date("2024-01-02T03:04:05.000Z");
  assert.deepEqual(normalizeResult("X", { gone: undefined, when, list: [undefined] }), {
    when: "2024-01-02T03:04:05.000Z",
    list: [null],
    success: true,
  });
});

Deno.test("normalizeResult returns a copy that does not share objects with the tool's value", () => {
  const inner = { v: 1 };
  const res = normalizeResult("X", { inner });
  inner.v = 2;
  assert.deepEqual(res.inner, { v: 1 });
});

Deno.test("normalizeResult gives success:false without an error a standard error", () => {
  assert.deepEqual(normalizeResult("X", { success: false }), {
    success: false,
    error: 'Cannot run tool "X": it failed without an error message',
  });
  assert.deepEqual(normalizeResult("X", { success: false, error: 42 }), {
    success: false,
    error: 'Cannot run tool "X": it failed without an error message',
  });
});

Deno.test("normalizeResult keeps the tool's own error of success:false", () => {
  assert.deepEqual(normalizeResult("X", { success: false, error: "disk full", code: 28 }), {
    success: false,
    error: "disk full",
    code: 28,
  });
});

Deno.test("normalizeResult refuses a non-boolean success", () => {
  assert.deepEqual(normalizeResult("X", { success: "yes" }), {
    success: false,
    error: 'Cannot run tool "X": its result has a non-boolean `success`',
  });
});

Deno.test("capResult returns a result within the limit unchanged", () => {
  const res: ToolResult = { success: true, output: "short" };
  assert.equal(capResult(res, 1024), res);
});

Deno.test("capResult cuts a large result with a marker and keeps success", () => {
  const res: ToolResult = { success: true, output: "a".repeat(10_000) };
  const size = _size(res);
  const capped = capResult(res, 2048);
  assert.equal(capped.success, true);
  assert.equal(capped.truncated, true);
  assert.equal(capped.error, undefined);
  const output = capped.output as string;
  assert.ok(output.startsWith('{"success":true,"output":"aaa'), output.slice(0, 40));
  assert.ok(
    output.endsWith(`…[truncated: result was ${size} bytes, limit 2048]`),
    output.slice(-80),
  );
  assert.ok(_size(capped) <= 2048, `capped result is ${_size(capped)} bytes`);
  assert.ok(_size(capped) > 2000, `capped result is only ${_size(capped)} bytes`);
});

Deno.test("capResult keeps success:false and the error of a large failure", () => {
  const res: ToolResult = {
    success: false,
    error: 'Cannot run tool "X": boom',
    log: "x".repeat(50_000),
  };
  const capped = capResult(res, 4096);
  assert.equal(capped.success, false);
  assert.equal(capped.error, 'Cannot run tool "X": boom');
  assert.equal(capped.truncated, true);
  assert.match(capped.output as string, /…\[truncated: result was \d+ bytes, limit 4096\]$/);
  assert.ok(_size(capped) <= 4096, `capped result is ${_size(capped)} bytes`);
});

Deno.test("capResult stays within the limit when the output is full of quotes and backslashes", () => {
  for (const ch of ['"', "\\", "\n"]) {
    const capped = capResult({ success: true, output: ch.repeat(100_000) }, 4096);
    assert.equal(capped.truncated, true);
    assert.ok(_size(capped) <= 4096, `${JSON.stringify(ch)}: capped is ${_size(capped)} bytes`);
  }
});

Deno.test("capResult stays within the limit when the error alone is longer than the limit", () => {
  const capped = capResult({ success: false, error: "e".repeat(5000) }, 1024);
  assert.equal(capped.success, false);
  assert.equal(capped.truncated, true);
  assert.equal(typeof capped.error, "string");
  assert.ok((capped.error as string).startsWith("eee"));
  assert.ok(_size(capped) <= 1024, `capped result is ${_size(capped)} bytes`);
});

Deno.test("capResult does not split a multi-byte character into a replacement character", () => {
  const capped = capResult({ success: true, output: "é😀".repeat(5000) }, 2048);
  assert.ok(!(capped.output as string).includes("\uFFFD"), "output has U+FFFD");
  assert.ok(_size(capped) <= 2048, `capped result is ${_size(capped)} bytes`);
});

Deno.test("jsonBytesBound is never below the real JSON size: escapes, surrogates, emoji, numbers, nesting", () => {
  const units = [
    "\u0000",
    "\u001f",
    '"',
    "\\",
    "\n",
    "é",
    "€",
    "😀",
    "\ud800",
    "\udfff",
    "a",
    "\u2028",
  ];
  let seed = 7;
  const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  const str = () => Array.from({ length: rnd(40) }, () => units[rnd(units.length)]).join("");
  const value = (depth: number): unknown => {
    const k = rnd(depth > 5 ? 4 : 7);
    if (k === 0) return str();
    if (k === 1) return [-1.7976931348623157e308, 5e-324, -2.2250738585072014e-308, NaN][rnd(4)];
    if (k === 2) return [true, false, null, undefined][rnd(4)];
    if (k === 3) return rnd(2) ? str() : -0;
    if (k === 4) return Array.from({ length: rnd(6) }, () => value(depth + 1));
    const o: Record<string, unknown> = rnd(2) ? {} : Object.create(null);
    for (let i = rnd(6); i > 0; i--) o[str()] = value(depth + 1);
    return o;
  };
  for (let i = 0; i < 3000; i++) {
    const v = { success: true, result: value(0) };
    const bytes = new TextEncoder().encode(JSON.stringify(v)).length;
    const bound = jsonBytesBound(v, 1e9);
    assert.ok(bound >= bytes, `bound ${bound} < ${bytes} for ${JSON.stringify(v).slice(0, 200)}`);
  }
});

Deno.test("capResult still encodes what the bound cannot vouch for: toJSON, bigints, cycles, throwing getters, class instances", () => {
  // A toJSON that inflates the result: the bound refuses to guess, so the cap still applies.
  const inflating = { success: true, output: { toJSON: () => "x".repeat(100_000) } } as ToolResult;
  const capped = capResult(inflating, 4096);
  assert.equal(capped.truncated, true);
  assert.ok(_size(capped) <= 4096);
  assert.equal(jsonBytesBound(inflating, 1e9), Infinity);
  // What JSON.stringify throws on still throws (the callers' behaviour is unchanged).
  assert.throws(() => capResult({ success: true, n: 1n } as unknown as ToolResult, 1e6), TypeError);
  const cycle: Record<string, unknown> = { success: true };
  cycle.self = cycle;
  assert.throws(() => capResult(cycle as ToolResult, 1e6), TypeError);
  const getter = Object.defineProperty({ success: true }, "boom", {
    enumerable: true,
    get() {
      throw new Error("getter");
    },
  });
  assert.throws(() => capResult(getter as ToolResult, 1e6), /getter/);
  class Big {
    get text() {
      return "y".repeat(100_000);
    }
    toJSON() {
      return { text: this.text };
    }
  }
  assert.equal(capResult({ success: true, v: new Big() } as ToolResult, 4096).truncated, true);
  assert.equal(jsonBytesBound({ at: new Map() }, 1e9), Infinity);
  // Over the limit the bound gives up early (Infinity), and the real size decides.
  const near = { success: true, output: "a".repeat(1000) };
  assert.equal(jsonBytesBound(near, 2000), Infinity);
  assert.equal(capResult(near, 2000), near);
});
