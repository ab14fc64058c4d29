/**
 * A POST's JSON-RPC body, read once by corral (its arrival timed by
 * ./_body_clock.ts) and handed to the MCP transport already parsed: how many
 * `tools/call` it holds (each counts against calls per minute), and whether
 * it is use of a session (a ping or a notification is not: an idle session
 * expires whether or not it is pinged).
 *
 * @module
 */
import { refuse } from "./_http_refusal.ts";

/** What {@link readRpcBody} found. */
export interface RpcBody {
  /** The parsed message or batch. */
  parsed: unknown;
  /** Its `tools/call` requests: the tool's name and its arguments. */
  calls: Array<{ name: string; args: unknown }>;
  /** It holds a request other than `ping` (notifications and answers are not use). */
  use: boolean;
}

/**
 * Read `req`'s body, at most `maxBytes` (more: 413, its connection closed),
 * and parse it (not JSON: 400, as the SDK would answer).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readRpcBody } from "./_rpc_body.ts";
 * const batch = [1, 2].map((id) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "X" } }));
 * const r = await readRpcBody(new Request("http://h/mcp", { method: "POST", body: JSON.stringify(batch) }), 1e6);
 * assert.ok(!(r instanceof Response) && r.calls.length === 2 && r.use);
 * const ping = await readRpcBody(new Request("http://h/mcp", { method: "POST", body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' }), 1e6);
 * assert.ok(!(ping instanceof Response) && !ping.use);
 * ```
 */
export async function readRpcBody(req: Request, maxBytes: number): Promise<RpcBody | Response> {
  const text = await _text(req, maxBytes);
  if (text === undefined) {
    return refuse(413, `Payload too large: over ${maxBytes} bytes (--max-body)`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return Response.json(
      { jsonrpc: "2.0", error: { code: -32700, message: "Parse error: Invalid JSON" }, id: null },
      { status: 400 },
    );
  }
  const list = (Array.isArray(parsed) ? parsed : [parsed]) as Array<
    { method?: unknown; id?: unknown; params?: { name?: unknown; arguments?: unknown } } | null
  >;
  const calls = list.filter((m) => m?.method === "tools/call").map((m) => ({
    name: String(m?.params?.name ?? ""),
    args: m?.params?.arguments ?? {},
  }));
  const use = list.some((m) =>
    typeof m?.method === "string" && m.method !== "ping" && m.id !== undefined
  );
  return { parsed, calls, use };
}

/** The body as text, or undefined past `maxBytes` (the rest is never read). */
async function _text(req: Request, maxBytes: number): Promise<string | undefined> {
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(all);
}
