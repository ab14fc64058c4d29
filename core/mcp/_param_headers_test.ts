/** Custom parameter headers (./_param_headers.ts): what is refused, and what passes. */
import assert from "node:assert/strict";
import { HEADER_MISMATCH, paramHeaderRefusal } from "./_param_headers.ts";

const SCHEMA = {
  type: "object",
  properties: { region: { type: "string", "x-mcp-header": "Region" }, n: { type: "number" } },
};
const schemaOf = (name: string) => name === "T" ? SCHEMA : undefined;

function check(region: unknown, header?: string) {
  const headers = new Headers(header === undefined ? {} : { "Mcp-Param-Region": header });
  const req = new Request("http://127.0.0.1/mcp", { method: "POST", headers });
  const body = {
    jsonrpc: "2.0",
    id: 7,
    method: "tools/call",
    params: { name: "T", arguments: region === undefined ? {} : { region } },
  };
  return paramHeaderRefusal(req, body, schemaOf);
}

Deno.test("a custom parameter header must match the body: missing, bad Base64 or different is 400 -32020", async () => {
  for (const [region, header] of [["eu", undefined], ["eu", "=?base64?ZXU?=="], ["eu", "us"]]) {
    const refused = check(region, header);
    assert.ok(refused, `${region} / ${header}`);
    assert.equal(refused.status, 400);
    const body = await refused.json();
    assert.equal(body.error.code, HEADER_MISMATCH);
    assert.equal(body.id, 7);
  }
  // A header without the body's value is a mismatch too.
  assert.equal(check(undefined, "eu")?.status, 400);
});

Deno.test("a matching literal or Base64 header passes; other tools and methods are not looked at", () => {
  assert.equal(check("eu", "eu"), undefined);
  assert.equal(check("é", `=?base64?${btoa(String.fromCharCode(0xc3, 0xa9))}?=`), undefined);
  assert.equal(check(undefined), undefined);
  const req = new Request("http://127.0.0.1/mcp", { method: "POST" });
  assert.equal(paramHeaderRefusal(req, { method: "tools/list" }, schemaOf), undefined);
  const other = { method: "tools/call", params: { name: "U", arguments: { region: "eu" } } };
  assert.equal(paramHeaderRefusal(req, other, schemaOf), undefined);
});
