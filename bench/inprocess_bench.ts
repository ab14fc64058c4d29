/**
 * The in-process part of a call, with Deno's own bench runner: a direct
 * call of the no-op tool's function against `invokeTool` (argument
 * validation with zod and the result contract, the work a sandbox does
 * around the function). `deno task bench` runs it with `--json` and adds its
 * numbers to BENCHMARKS.md; alone:
 *
 *     deno bench -A bench/inprocess_bench.ts
 *
 * Round trips to a worker or a child process are timed by bench/calls.ts
 * instead: `deno bench` batches fast iterations and reports no median, and
 * for message round trips it gave unstable numbers (a 3 µs "round trip" to a
 * worker in one group, 70 ms averages from single outliers in another).
 *
 * @module
 */
import { collectTools, invokeTool, testContext } from "../core/tool/mod.ts";
import * as noopModule from "./noop_tools.ts";

const { tools: [noop] } = await collectTools(noopModule as Record<string, unknown>);
const ctx = testContext();
const fn = noopModule.TOOL_CONFIGS[0].function;

Deno.bench("direct function call", { group: "in-process", baseline: true }, () => {
  fn();
});
Deno.bench("invokeTool (validate + contract)", { group: "in-process" }, async () => {
  await invokeTool(noop, {}, ctx);
});
