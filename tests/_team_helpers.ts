// Shared helpers of the team tests that run `corral mcp --http` as a process: a workspace,
// corral's config directory with identities and their static tokens, and raw MCP requests.
import { join } from "node:path";
import { addToken } from "../core/identity/token_store.ts";
import { INIT_BODY } from "../testing/mod.ts";
import {
  type HttpCorral,
  startHttpCorral,
  type TempWorkspace,
  tempWorkspace,
} from "./_mcp_helpers.ts";

/** The operator's token of every team server started here. */
export const OPERATOR_TOKEN = "o".repeat(48);

/** A running team server and what a test needs of it. */
export interface TeamCorral {
  ws: TempWorkspace;
  corral: HttpCorral;
  url: string;
  /** Each identity's static token. */
  tokens: Record<string, string>;
  /** The audit log (`--audit`). */
  audit: string;
  /** Stop the server (SIGTERM: it writes what it counted), keeping its files. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Start `corral mcp --http` with `identities` (each working in the test's
 * workspace unless it names another), a static token for each, `--audit`,
 * and `extra` flags (`-x` for RunBashCode, limits, …).
 */
export async function teamCorral(
  identities: Record<string, Record<string, unknown>>,
  extra: string[] = [],
  options: {
    ws?: TempWorkspace;
    config?: Record<string, unknown>;
    /** The server's environment besides the helpers' (`CORRAL_TOOL_DIRS`, …). */
    env?: Record<string, string>;
  } = {},
): Promise<TeamCorral> {
  const ws = options.ws ?? await tempWorkspace();
  const configDir = join(ws.cache, "config");
  await Deno.mkdir(configDir, { recursive: true });
  const ids = Object.fromEntries(
    Object.entries(identities).map((
      [n, c],
    ) => [n, { workspace: ws.dir, shared_workspace: true, ...c }]),
  );
  await Deno.writeTextFile(
    join(configDir, "corral.json"),
    JSON.stringify({ identities: ids, ...options.config }),
  );
  const tokens: Record<string, string> = {};
  for (const n of Object.keys(identities)) {
    tokens[n] = await addToken(n, join(configDir, "tokens.json")).catch(async () => {
      // Already there (a second server on the same config directory): make it again.
      const { revokeToken } = await import("../core/identity/token_store.ts");
      await revokeToken(n, join(configDir, "tokens.json"));
      return await addToken(n, join(configDir, "tokens.json"));
    });
  }
  const audit = join(ws.cache, `audit-${crypto.randomUUID()}.jsonl`);
  const corral = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--token", OPERATOR_TOKEN, "--audit", audit, ...extra],
    ws,
    options.env,
  );
  return {
    ws,
    corral,
    url: corral.url,
    tokens,
    audit,
    stop: () => corral[Symbol.asyncDispose](),
    async [Symbol.asyncDispose]() {
      await corral[Symbol.asyncDispose]();
      if (!options.ws) await ws[Symbol.asyncDispose]();
    },
  };
}

/** The headers of a POST with `token`, and the session `sid` when given. */
export function postHeaders(token: string, sid?: string): Record<string, string> {
  return {
    authorization: `Bearer ${token}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
    ...(sid ? { "mcp-session-id": sid } : {}),
  };
}

/** Open a session with `token` (initialize, then initialized): its id, or the refusal's status. */
export async function openSession(url: string, token: string): Promise<string | number> {
  const init = await fetch(url, { method: "POST", headers: postHeaders(token), body: INIT_BODY });
  await init.body?.cancel();
  const sid = init.headers.get("mcp-session-id");
  if (init.status !== 200 || !sid) return init.status;
  const done = await fetch(url, {
    method: "POST",
    headers: postHeaders(token, sid),
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  await done.body?.cancel();
  return sid;
}

/**
 * The JSON-RPC answers of a POST (a JSON body, or the `data:` lines of an
 * event stream), notifications left out.
 */
export async function rpcAnswers(res: Response): Promise<Array<Record<string, unknown>>> {
  const text = await res.text();
  const all: unknown[] = (res.headers.get("content-type") ?? "").includes("text/event-stream")
    ? text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)))
    : [JSON.parse(text)];
  return (all.flatMap((m) => Array.isArray(m) ? m : [m]) as Array<Record<string, unknown>>)
    .filter((m) => m.method === undefined);
}

/** A `tools/call` request. */
export function toolCall(id: number, name: string, args: Record<string, unknown> = {}) {
  return { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } };
}
