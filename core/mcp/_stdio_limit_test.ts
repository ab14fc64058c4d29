import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { PassThrough } from "node:stream";
import { limitLines } from "./_stdio_limit.ts";

const _tick = () => new Promise((r) => setTimeout(r, 10));

Deno.test("limitLines: lines split across chunks, several per chunk, and an oversized one in pieces", async () => {
  const input = new PassThrough();
  const seen: Array<[string | null, number]> = [];
  const out = limitLines(
    input as unknown as NodeJS.ReadableStream,
    20,
    (id, n) => seen.push([id, n]),
  );
  const got: string[] = [];
  out.on("data", (c: Buffer) => got.push(c.toString()));
  // The oversized line's id is in its first piece; the rest of it arrives in later chunks.
  for (
    const c of [
      '{"a":1}\n{"b',
      '":2}\n{"id":"x\\"y","p":"',
      "0123456789",
      '0123456789"}\n{"c":3}\n',
    ]
  ) {
    input.write(Buffer.from(c));
    await _tick();
  }
  assert.deepEqual(got, ['{"a":1}\n', '{"b":2}\n', '{"c":3}\n']);
  assert.deepEqual(seen, [['"x\\"y"', 40]]);
});

Deno.test("limitLines: a line that comes before anyone listens is kept for the first listener", async () => {
  const input = new PassThrough();
  const out = limitLines(input as unknown as NodeJS.ReadableStream, 100, () => {});
  input.write('{"early":1}\n');
  await _tick();
  const got: string[] = [];
  out.on("data", (c: Buffer) => got.push(c.toString()));
  input.write('{"late":2}\n');
  await _tick();
  assert.deepEqual(got, ['{"early":1}\n', '{"late":2}\n']);
});

// A child process serving limitedStdin(50) on its real stdin, printing what comes out.
const _CHILD = `
import { limitedStdin } from ${JSON.stringify(new URL("./_stdio_limit.ts", import.meta.url).href)};
import { fstatSync } from "node:fs";
import process from "node:process";
const lines = limitedStdin(50);
lines.on("data", (l) => process.stdout.write("line " + new TextDecoder().decode(l)));
lines.on("error", (e) => process.stdout.write("error " + e.message + "\\n"));
lines.on("end", () => {
  let fd0 = "closed";
  try { fd0 = fstatSync(0).isFIFO() ? "pipe" : "open"; } catch { /* closed */ }
  process.stdout.write("end, fd 0 " + fd0 + "\\n");
});
`;

async function _runChild(stdin: "piped" | "null" | string): Promise<string[]> {
  const dir = await Deno.makeTempDir({ prefix: "corral_stdio_limit_" });
  try {
    const script = `${dir}/child.ts`;
    await Deno.writeTextFile(script, _CHILD);
    const args = ["run", "--allow-read", "--no-lock", script];
    if (stdin !== "piped" && stdin !== "null") {
      // A regular file: the shell opens it as the child's stdin.
      const cmd = `exec "$0" "$@" < "${stdin}"`;
      const out = await new Deno.Command("sh", { args: ["-c", cmd, Deno.execPath(), ...args] })
        .output();
      return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l);
    }
    const child = new Deno.Command(Deno.execPath(), { args, stdin, stdout: "piped" }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    if (stdin === "piped") {
      const w = child.stdin.getWriter();
      await w.write(new TextEncoder().encode(_INPUT.slice(0, 9)));
      // The first line is answered while stdin stays open: input is read as it comes.
      while (!text.includes("\n")) text += (await reader.read()).value ?? "";
      await w.write(new TextEncoder().encode(_INPUT.slice(9)));
      await w.close();
    }
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
    await child.status;
    return text.split("\n").filter((l) => l);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

// An oversized line longer than one read (64 KiB), a line after it, and a last one without "\n".
const _INPUT = `{"id":1}\n{"id":2,"pad":"${"x".repeat(200_000)}"}\n{"id":3}\n{"id":4}`;
const _REFUSED =
  '{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Request too large: 200017 bytes, limit 50 (--max-body); ignored"}}';

Deno.test("limitedStdin on a real stdin: a pipe, a file and /dev/null give the same lines, the same refusal and the end", async () => {
  const dir = await Deno.makeTempDir({ prefix: "corral_stdio_input_" });
  try {
    const file = `${dir}/input.jsonl`;
    await Deno.writeTextFile(file, _INPUT);
    const expected = ['line {"id":1}', _REFUSED, 'line {"id":3}'];
    // A pipe is read through node:net, which closes fd 0 at the end: something is put back there.
    assert.deepEqual(await _runChild("piped"), [...expected, "end, fd 0 open"]);
    assert.deepEqual(await _runChild(file), [...expected, "end, fd 0 open"]);
    assert.deepEqual(await _runChild("null"), ["end, fd 0 open"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
