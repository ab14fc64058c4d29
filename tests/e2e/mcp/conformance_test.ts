/**
 * A real external client: the MCP conformance suite
 * (`npm:@modelcontextprotocol/conformance`, pinned in tests/mcp_conformance.json
 * and locked in tests/mcp_conformance.lock) runs every server scenario of both
 * revisions corral serves, the tasks extension's included (its tools:
 * tests/fixtures/mcp_conformance/task_tools.ts), against `corral mcp --http`, started as the README
 * documents it: the suite's tools as file-drop plugins
 * (`CORRAL_TOOL_DIRS=tests/fixtures/mcp_conformance`), its resources, prompts
 * and completions from a hosted server installed by `corral servers install`
 * with the same `--config` and `--permissions`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { CORRAL_ARGS, ROOT } from "../../../testing/mod.ts";
import {
  childEnv,
  startHttpCorral,
  type TempWorkspace,
  tempWorkspace,
} from "../../_mcp_helpers.ts";

const SUITE = join(ROOT, "tests", "mcp_conformance.json");
const FIXTURE = join(ROOT, "tests", "fixtures", "mcp_conformance");
const FILES = [
  "--config",
  join(FIXTURE, "corral.json"),
  "--permissions",
  join(FIXTURE, "permissions.json"),
];
/** How many scenarios each revision scores (`conformance list --server --requirements REV`). */
const SCORED: Record<string, number> = { "2025-11-25": 30, "2026-07-28": 37 };
/**
 * The tasks extension's scenarios, run (never scored) with 2026-07-28: each passes
 * (`tasks-status-notifications` is skipped by the suite itself, its checks pending).
 */
const TASKS = [
  "tasks-lifecycle",
  "tasks-capability-negotiation",
  "tasks-wire-fields",
  "tasks-request-state-removal",
  "tasks-mrtr-input",
  "tasks-request-headers",
  "tasks-dispatch-and-envelope",
  "tasks-status-notifications",
  "tasks-required-task-error",
  "tasks-mrtr-composition",
];

const decode = (b: Uint8Array) => new TextDecoder().decode(b);

/** `corral servers install` with the fixture's files, in the workspace's private config. */
async function install(ws: TempWorkspace, env: Record<string, string>): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [...CORRAL_ARGS, "servers", "install", "--workspace", ws.dir, ...FILES],
    env: { ...childEnv(ws.cache), ...env },
    cwd: ROOT,
    stdin: "null",
  }).output();
  const text = decode(out.stdout) + decode(out.stderr);
  assert.equal(out.code, 0, text);
  return text;
}

/** Run the suite's server scenarios of `revision` against `url`; its whole output. */
async function runSuite(url: string, revision: string): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--config",
      SUITE,
      "@modelcontextprotocol/conformance",
      "server",
      "--url",
      url,
      "--requirements",
      revision,
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  return decode(out.stdout) + decode(out.stderr);
}

/** The scenarios of the suite's summary, and those it does not score. */
function summary(output: string): {
  passed: string[];
  failed: string[];
  unscored: Set<string>;
} {
  const tail = output.slice(output.indexOf("=== SUMMARY ==="));
  const passed: string[] = [];
  const failed: string[] = [];
  for (const m of tail.matchAll(/^([✓✗]) ([\w-]+): \d+ passed, \d+ failed$/gm)) {
    (m[1] === "✓" ? passed : failed).push(m[2]);
  }
  const unscored = new Set([...tail.matchAll(/^ {2}[✓✗] ([\w-]+) \(/gm)].map((m) => m[1]));
  return { passed, failed, unscored };
}

Deno.test("the pinned MCP conformance suite passes every scored scenario of 2025-11-25 and 2026-07-28, and every tasks-extension scenario, against corral mcp --http", async (t) => {
  await using ws = await tempWorkspace();
  const env = { CORRAL_TOOL_DIRS: FIXTURE };
  assert.match(await install(ws, env), /conformance: approved/);
  await using corral = await startHttpCorral(["--http", "127.0.0.1:0", ...FILES], ws, env);
  for (const [revision, scored] of Object.entries(SCORED)) {
    await t.step(revision, async () => {
      const output = await runSuite(corral.url, revision);
      const { passed, failed, unscored } = summary(output);
      const scoredFailed = failed.filter((s) => !unscored.has(s));
      assert.deepEqual(scoredFailed, [], output);
      assert.equal(passed.filter((s) => !unscored.has(s)).length, scored, output);
      // Unscored ones pass too: pending (JSON Schema 2020-12 keywords, custom parameter
      // headers) and the tasks extension's.
      assert.deepEqual(failed, [], output);
      if (revision === "2026-07-28") {
        assert.deepEqual(TASKS.filter((s) => !passed.includes(s)), [], output);
      }
    });
  }
});
