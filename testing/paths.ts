/**
 * Where things are, for the tests and the bench: absolute paths, each folder
 * with a trailing slash.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FIXTURES, ROOT } from "./paths.ts";
 * assert.ok(Deno.statSync(`${ROOT}main.ts`).isFile);
 * assert.equal(FIXTURES, `${ROOT}tests/fixtures/`);
 * ```
 *
 * @module
 */

/** The project root. */
export const ROOT: string = new URL("..", import.meta.url).pathname;
/** The tests' fixtures: tool modules, plugins, servers. */
export const FIXTURES: string = `${ROOT}tests/fixtures/`;
/** The hosted-server fixtures (`servers.json`, the raw JSON-RPC servers). */
export const HOSTED_FIXTURES: string = `${FIXTURES}hosted/`;
