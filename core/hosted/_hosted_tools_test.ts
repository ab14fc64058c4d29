// A hosted server's result as corral's: only what MCP defines travels on.
import assert from "node:assert/strict";
import { hostedResult } from "./_hosted_tools.ts";

Deno.test("hostedResult keeps only the members MCP defines of each checked block", () => {
  const r = hostedResult("read", {
    content: [
      {
        type: "text",
        text: "hi",
        smuggled: "x".repeat(10),
        annotations: { priority: 7, audience: ["user"] },
      },
      { type: "resource", resource: { uri: "file:///a", text: "t", extra: 1 }, _meta: { a: 1 } },
      { type: "resource_link", uri: "file:///b", name: "b" },
    ],
  }, 100_000);
  assert.equal(r.success, true);
  assert.deepEqual(r.content_blocks, [
    { type: "text", text: "hi", annotations: { audience: ["user"] } },
    { type: "resource", resource: { uri: "file:///a", text: "t" }, _meta: { a: 1 } },
    { type: "text", text: JSON.stringify({ type: "resource_link", uri: "file:///b", name: "b" }) },
  ]);
  assert.doesNotMatch(JSON.stringify(r), /smuggled|extra/);
});

Deno.test("hostedResult refuses a checked block that is broken, naming the problem", () => {
  const r = hostedResult(
    "read",
    { content: [{ type: "image", data: "%%", mimeType: "text/x" }] },
    1e5,
  );
  assert.equal(r.success, false);
  assert.match(JSON.stringify(r), /content_blocks\[0\]\.data must be base64/);
});
