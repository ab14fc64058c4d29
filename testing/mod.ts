/**
 * What the tests (`tests/`, and the tests beside core's files) and the
 * benchmarks (`bench/`) share: where things are, temp folders that go away
 * at the end, free ports, corral started as a process, an MCP client's first
 * words, a registry over fixture tools, fixture servers' command lines, and
 * real services of their own (PostgreSQL, Redis, a canary listener).
 * Helpers only one of them uses stay there (`tests/_*.ts`, `bench/lib.ts`).
 * corral itself never imports this folder.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { freePort, ROOT, tempDir } from "./mod.ts";
 * const dir = await tempDir("corral_test_doc_");
 * assert.ok(dir.startsWith("/") && Deno.statSync(`${ROOT}deno.json`).isFile);
 * assert.ok(freePort() > 0);
 * ```
 *
 * @module
 */
export { FIXTURES, HOSTED_FIXTURES, ROOT } from "./paths.ts";
export { removeAtUnload, removeTree, tempDir, TEST_PREFIX } from "./temp_dir.ts";
export { freePort } from "./free_port.ts";
export { firstFile } from "./first_file.ts";
export { stopChild } from "./stop_child.ts";
export {
  CORRAL_ARGS,
  CORRAL_FLAGS,
  type CorralHttp,
  type CorralHttpOptions,
  startCorralHttp,
} from "./corral_http.ts";
export { connectWithToken, INIT_BODY, INIT_REQUEST, MCP_POST_HEADERS } from "./mcp_client.ts";
export { fixtureRegistry } from "./fixture_registry.ts";
export {
  fixtureServer,
  type FixtureServerOptions,
  PY_STDIO_RPC,
  pyFixtureServer,
  STDIO_RPC,
} from "./fixture_server.ts";
export { REDIS_SERVER, startRedis, type TestRedis } from "./redis.ts";
export { type Canary, type Service, startCanary, startPostgres } from "./services.ts";
