import assert from "node:assert/strict";
import { apiContent, contentProblems, mcpContent } from "./content.ts";
import { capResult, normalizeResult } from "./result.ts";

Deno.test("a result with bad content blocks fails, naming each problem", () => {
  const r = normalizeResult("Pic", {
    content_blocks: [
      { type: "image", data: "%%%", mimeType: "image/png" },
      { type: "audio", data: "AAAA", mimeType: "image/png" },
      { type: "resource", resource: { uri: "not a uri", text: "x" } },
      { type: "video" },
    ],
  });
  assert.equal(r.success, false);
  assert.match(r.error!, /content_blocks\[0\]\.data must be base64/);
  assert.match(r.error!, /content_blocks\[1\]\.mimeType "image\/png" is not an audio type/);
  assert.match(r.error!, /content_blocks\[2\]\.resource\.uri must be a URI/);
  assert.match(r.error!, /content_blocks\[3\]\.type must be text, image, audio or resource/);
});

Deno.test("content blocks count in the size cap; a cut result says so and falls back to text", () => {
  const big = {
    success: true,
    content_blocks: [{ type: "image", data: "A".repeat(40_000), mimeType: "image/png" }],
  };
  assert.deepEqual(contentProblems(big.content_blocks), []);
  const cut = capResult(big, 4096);
  assert.equal(cut.truncated, true);
  assert.deepEqual(mcpContent(cut, "text").map((b) => b.type), ["text"]);
});

Deno.test("content blocks map to Anthropic image blocks and to OpenAI text", () => {
  const r = {
    success: true,
    content_blocks: [{ type: "text", text: "hi" }, {
      type: "image",
      data: "AAAA",
      mimeType: "image/png",
    }],
  };
  const a = apiContent(r, "anthropic") as Array<Record<string, unknown>>;
  assert.deepEqual(a[0], { type: "text", text: "hi" });
  assert.deepEqual(a[1], {
    type: "image",
    source: { type: "base64", media_type: "image/png", data: "AAAA" },
  });
  assert.match(apiContent(r, "openai") as string, /not shown/);
});
