/**
 * corral's public testing entry for tool authors: run a tool directly (no
 * sandbox) with a test context and check it against the tool contract.
 * Tests that `corral new` writes import this file (or `@corral/corral/testing`),
 * never corral's internal paths, which may move.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { z } from "zod";
 * import { collectTools, invokeTool, testContext } from "./testing.ts";
 * const mod = {
 *   TOOL_CONFIGS: [{
 *     name: "Shout",
 *     description: "Upper-case a text",
 *     input_schema: z.object({ text: z.string() }),
 *     function: ({ text }: { text: string }) => ({ success: true, text: text.toUpperCase() }),
 *   }],
 * };
 * const { tools, problems } = await collectTools(mod);
 * assert.deepEqual(problems, []);
 * const result = await invokeTool(tools[0], { text: "hi" }, testContext());
 * assert.equal(result.text, "HI");
 * ```
 *
 * @module
 */
export { invokeTool, testContext } from "./tool/mod.ts";
export { collectTools } from "./tool/mod.ts";
export type { Grant, ToolCallContext, ToolDefinition } from "./tool/mod.ts";
export type { ToolResult } from "./tool/mod.ts";
