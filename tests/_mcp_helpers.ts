// Shared helpers of the MCP end-to-end tests: start `corral mcp` processes, connect to them.
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CallToolResult } from "@modelcontextprotocol/client";
import { type CorralHttp, removeTree, ROOT, startCorralHttp, tempDir } from "../testing/mod.ts";

/** A temporary workspace holding `notes.txt`, and a private discovery cache. */
export interface TempWorkspace {
  dir: string;
  cache: string;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Make a {@link TempWorkspace}; dispose it to remove both folders (else they
 * go when the test file ends, testing/temp_dir.ts).
 */
export async function tempWorkspace(): Promise<TempWorkspace> {
  const dir = await tempDir("corral_test_mcp_ws_");
  const cache = await tempDir("corral_test_mcp_cache_");
  await Deno.writeTextFile(join(dir, "notes.txt"), "one two three\nfour five\n");
  return {
    dir,
    cache,
    [Symbol.asyncDispose]() {
      removeTree(dir);
      removeTree(cache);
      return Promise.resolve();
    },
  };
}

/** The environment of a corral child: no colour, a private cache, no token from outside. */
export function childEnv(cache: string): Record<string, string> {
  const out: Record<string, string> = {
    ...Deno.env.toObject(),
    NO_COLOR: "1",
    CORRAL_CACHE_DIR: cache,
    // Never the developer's own config directory (the server keeps its token there).
    CORRAL_CONFIG_DIR: join(cache, "config"),
    // A file-drop plugin with progress and a cancellable sleep.
    CORRAL_TOOL_DIRS: join(ROOT, "tests", "fixtures", "mcp_plugins"),
  };
  delete out.CORRAL_MCP_TOKEN;
  return out;
}

/** A `corral mcp --http` process that has printed its URL on stderr. */
export type HttpCorral = CorralHttp;

/** Start `corral mcp --workspace DIR -r -w EXTRA…` and wait for its URL. */
export async function startHttpCorral(
  extra: string[],
  ws: TempWorkspace,
  env: Record<string, string> = {},
): Promise<HttpCorral> {
  return await startCorralHttp(
    [
      ...["--workspace", ws.dir, "-r", "-w"],
      ...extra,
      // Tests that do not test the token serve without one (loopback only).
      ...(extra.includes("--token") || extra.includes("--keep-token") ? [] : ["--no-token"]),
    ].filter((a) => a !== "--keep-token"),
    { env: { ...childEnv(ws.cache), ...env } },
  );
}

/** What an SDK client's `callTool` returns: the v1 client's, or the v2 one's (testing/mcp_client.ts). */
export type CallResult = Awaited<ReturnType<Client["callTool"]>> | CallToolResult;

/** The text blocks of a call's result, one per line. */
export function textOf(result: CallResult): string {
  return (result.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("\n");
}
