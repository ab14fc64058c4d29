import assert from "node:assert/strict";
import { sha256Hex, useNativeSha256 } from "./sha256.ts";

async function _web(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Lengths around every padding edge (55/56 bytes, whole blocks) and a few larger ones. */
const _LENGTHS = [
  ...Array.from({ length: 200 }, (_, i) => i),
  447,
  448,
  511,
  512,
  513,
  4095,
  4096,
  4097,
  65_537,
];

function _bytes(n: number, seed: number): Uint8Array<ArrayBuffer> {
  return new Uint8Array(n).map(() => (seed = (seed * 1103515245 + 12345) % 2 ** 31) & 255);
}

// The first test runs before anything in this file loads node:crypto: the TypeScript path.
Deno.test("sha256Hex in TypeScript (before node:crypto is loaded) equals WebCrypto's SHA-256, padding edges included", async () => {
  for (const n of _LENGTHS) {
    const bytes = _bytes(n, n + 3);
    assert.equal(sha256Hex(bytes), await _web(bytes), `${n} bytes`);
  }
  const text = "é→𝄞 corral";
  assert.equal(sha256Hex(text), await _web(new TextEncoder().encode(text)));
});

Deno.test("sha256Hex after useNativeSha256 gives the same digests as before (node:crypto)", async () => {
  const before = _LENGTHS.map((n) => sha256Hex(_bytes(n, n + 5)));
  await useNativeSha256();
  await useNativeSha256(); // once is enough; again is harmless
  assert.deepEqual(_LENGTHS.map((n) => sha256Hex(_bytes(n, n + 5))), before);
  for (const n of [0, 55, 56, 64, 65_537]) {
    const bytes = _bytes(n, n + 5);
    assert.equal(sha256Hex(bytes), await _web(bytes), `${n} bytes`);
  }
});
