/**
 * A real external client: the MCP conformance suite
 * (`npm:@modelcontextprotocol/conformance`, pinned in tests/mcp_conformance.json
 * and locked in tests/mcp_conformance.lock) runs its server scenarios against
 * `corral mcp --http` on a free loopback port.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, startHttpCorral, tempWorkspace } from "./_mcp_helpers.ts";

const CONFIG = join(ROOT, "tests", "mcp_conformance.json");
const SCENARIOS = [
  "server-initialize",
  "ping",
  "tools-list",
  "logging-set-level",
  "dns-rebinding-protection",
  // The tool scenarios, against the suite's tools as file-drop plugins
  // (tests/fixtures/mcp_conformance/), each in its own process sandbox.
  "tools-call-simple-text",
  "tools-call-image",
  "tools-call-audio",
  "tools-call-embedded-resource",
  "tools-call-mixed-content",
  "tools-call-with-logging",
  "tools-call-error",
  "tools-call-with-progress",
  "json-schema-2020-12",
  "tools-call-sampling",
  "tools-call-elicitation",
  "elicitation-sep1034-defaults",
  "elicitation-sep1330-enums",
  "server-sse-multiple-streams",
];

async function runScenario(
  url: string,
  scenario: string,
): Promise<{ code: number; output: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--config",
      CONFIG,
      "@modelcontextprotocol/conformance",
      "server",
      "--url",
      url,
      "--scenario",
      scenario,
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, output: decode(out.stdout) + decode(out.stderr) };
}

Deno.test("the MCP conformance suite passes its server scenarios against corral mcp --http", async (t) => {
  await using ws = await tempWorkspace();
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0"], ws, {
    CORRAL_TOOL_DIRS: join(ROOT, "tests", "fixtures", "mcp_conformance"),
  });
  for (const scenario of SCENARIOS) {
    await t.step(scenario, async () => {
      const { code, output } = await runScenario(corral.url, scenario);
      assert.equal(code, 0, output);
      const passed = /Passed: (\d+)\/(\d+), 0 failed/.exec(output);
      assert.ok(passed, `no "Passed: N/N, 0 failed" line:\n${output}`);
      assert.equal(passed[1], passed[2], output);
      assert.ok(Number(passed[1]) > 0, output);
      assert.doesNotMatch(output, /FAILURE/, output);
    });
  }
});
