// Shared helpers of the MCP end-to-end tests: start `corral mcp` processes, connect to them.
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { HOST_FLAGS } from "../core/sandbox/host_flags.ts";

/** The project root. */
export const ROOT = new URL("..", import.meta.url).pathname;

/** A raw MCP `initialize` request (id 1), for tests that speak HTTP or stdio without the SDK. */
export const INIT_REQUEST = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "t", version: "1" },
  },
};

/** {@link INIT_REQUEST} as JSON text. */
export const INIT_BODY = JSON.stringify(INIT_REQUEST);

/** The headers of a JSON-RPC POST to a Streamable HTTP MCP server. */
export const MCP_POST_HEADERS = {
  "Content-Type": "application/json",
  Accept: "application/json, text/event-stream",
};

/** `deno` arguments that run corral with the permissions of the `corral` task in deno.json. */
export const CORRAL_ARGS = [
  "run",
  ...HOST_FLAGS,
  "--config",
  join(ROOT, "deno.json"),
  join(ROOT, "main.ts"),
];

/** A temporary workspace holding `notes.txt`, and a private discovery cache. */
export interface TempWorkspace {
  dir: string;
  cache: string;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Make a {@link TempWorkspace}; dispose it to remove both folders. */
export async function tempWorkspace(): Promise<TempWorkspace> {
  const dir = await Deno.makeTempDir({ prefix: "corral_mcp_ws_" });
  const cache = await Deno.makeTempDir({ prefix: "corral_mcp_cache_" });
  await Deno.writeTextFile(join(dir, "notes.txt"), "one two three\nfour five\n");
  return {
    dir,
    cache,
    async [Symbol.asyncDispose]() {
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(cache, { recursive: true });
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
export interface HttpCorral {
  /** The endpoint, e.g. `http://127.0.0.1:41234/mcp`. */
  url: string;
  /** Its process id on the host (its sandboxes are its children). */
  pid: number;
  /** Everything it wrote on stderr so far. */
  stderr(): string;
  /** Kill it at once (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** SIGTERM, then wait for the exit. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Start `corral mcp --workspace DIR -r -w EXTRA…` and wait for its URL. */
export async function startHttpCorral(
  extra: string[],
  ws: TempWorkspace,
  env: Record<string, string> = {},
): Promise<HttpCorral> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      ...CORRAL_ARGS,
      "mcp",
      "--workspace",
      ws.dir,
      "-r",
      "-w",
      ...extra,
      // Tests that do not test the token serve without one (loopback only).
      ...(extra.includes("--token") || extra.includes("--keep-token") ? [] : ["--no-token"]),
    ].filter((a) => a !== "--keep-token"),
    env: { ...childEnv(ws.cache), ...env },
    cwd: ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let url: string | undefined;
  while (url === undefined) {
    const { value, done } = await reader.read();
    if (done) {
      await child.status;
      throw new Error(`corral mcp --http ended before listening:\n${text}`);
    }
    text += value;
    url = /(http:\/\/\S+\/mcp)/.exec(text)?.[1];
  }
  // Keep draining stderr so that the child never blocks on a full pipe.
  const drained = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += value;
    }
  })();
  let dead = false;
  return {
    url,
    pid: child.pid,
    stderr: () => text,
    async kill() {
      dead = true;
      child.kill("SIGKILL");
      await child.status;
    },
    async [Symbol.asyncDispose]() {
      // Once: a test may end it early and leave the rest to `await using`.
      if (!dead) child.kill("SIGTERM");
      dead = true;
      await child.status;
      await drained;
    },
  };
}

/** What an SDK client's `callTool` returns. */
export type CallResult = Awaited<ReturnType<Client["callTool"]>>;

/** The text blocks of a call's result, one per line. */
export function textOf(result: CallResult): string {
  return (result.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("\n");
}

/** An SDK client connected over Streamable HTTP to `url` with a bearer `token`. */
export async function connectWithToken(url: string, token: string, name: string): Promise<Client> {
  const client = new Client({ name, version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}
