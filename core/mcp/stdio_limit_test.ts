import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { PassThrough } from "node:stream";
import { limitLines } from "./stdio_limit.ts";

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
