/**
 * What a tool call asks the client of that call: confirmation of a tool
 * that needs it (through elicitation), and a tool's own questions
 * (sampling, elicitation), only while the call runs.
 *
 * @module
 */
import type { ElicitResult, Server } from "@modelcontextprotocol/server";
import type { ToolInfo } from "../registry/mod.ts";
import { ASK_KEY_META, type AskKind } from "../sandbox/mod.ts";
import type { CallExtra } from "./_call_extra.ts";

/** A person answers: allow longer than the SDK's 60 s default. */
const _CONFIRM_TIMEOUT_MS = 10 * 60_000;

/** How one call asks its client (RegistryCallOptions.confirm and onAsk). */
export interface ClientAsks {
  /** Ask the client to confirm a run; undefined when it cannot be asked. */
  confirm?: (tool: ToolInfo, args: unknown) => Promise<boolean>;
  /** Put a tool's question to the client; `ended` withdraws it when the call returns. */
  onAsk: (kind: AskKind, params: unknown, ended?: AbortSignal) => Promise<unknown>;
}

/** The MCP request of each kind of question, and the client capability it needs. */
export const ASK_METHODS: Record<AskKind, { method: string; capability: string }> = {
  sample: { method: "sampling/createMessage", capability: "sampling" },
  elicit: { method: "elicitation/create", capability: "elicitation" },
  roots: { method: "roots/list", capability: "roots" },
};

/** A tool's params without its own name for the question (ASK_KEY_META), and that name. */
export function unkeyed(params: unknown): { params: Record<string, unknown>; key?: string } {
  const p = (params && typeof params === "object" ? params : {}) as Record<string, unknown>;
  const meta = p._meta as Record<string, unknown> | undefined;
  if (!meta || typeof meta !== "object" || !(ASK_KEY_META in meta)) return { params: p };
  const { [ASK_KEY_META]: key, ...rest } = meta;
  const out: Record<string, unknown> = { ...p, _meta: rest };
  if (!Object.keys(rest).length) delete out._meta;
  return { params: out, ...(typeof key === "string" ? { key } : {}) };
}

/**
 * The asks of one call, to the client of that call. `elicitation: false`
 * (stateless HTTP) asks nothing through elicitation.
 */
export function clientAsks(
  server: Server,
  extra: CallExtra,
  elicitation: boolean | undefined,
): ClientAsks {
  const canElicit = elicitation !== false &&
    server.getClientCapabilities()?.elicitation !== undefined;
  return {
    confirm: canElicit
      ? (tool, args) =>
        _confirm(
          (r) => extra.sendRequest(r, { signal: extra.signal, timeout: _CONFIRM_TIMEOUT_MS }),
          tool,
          args,
        )
      : undefined,
    onAsk: _asker(server, extra, elicitation),
  };
}

/**
 * The asks of one call of a 2026-07-28 client: each question becomes part
 * of an input-required round (./_input_rounds.ts) through `ask`, under the
 * tool's own name for it when it gave one; confirmation only when this
 * request declares elicitation.
 */
export function roundAsks(
  ask: (method: string, params: Record<string, unknown>, key?: string) => Promise<unknown>,
  capabilities: Record<string, unknown>,
): ClientAsks {
  const send: ConfirmSend = (r) => ask(r.method, r.params);
  return {
    confirm: capabilities.elicitation !== undefined
      ? (tool, args) => _confirm(send, tool, args)
      : undefined,
    onAsk: (kind, raw) => {
      const { params, key } = unkeyed(raw);
      return ask(ASK_METHODS[kind].method, params, key);
    },
  };
}

type ConfirmSend = (r: { method: string; params: Record<string, unknown> }) => Promise<unknown>;

async function _confirm(send: ConfirmSend, tool: ToolInfo, callArgs: unknown): Promise<boolean> {
  try {
    const answer = await send({
      method: "elicitation/create",
      params: {
        message: `Run ${tool.name} (letters ${tool.permissions || "none"}) with ${
          JSON.stringify(callArgs)
        }?`,
        requestedSchema: {
          type: "object",
          properties: {
            approve: { type: "boolean", title: `Run ${tool.name}`, default: true },
          },
        },
      },
    }) as ElicitResult;
    return answer.action === "accept" && answer.content?.approve !== false;
  } catch {
    return false;
  }
}

function _asker(
  server: Server,
  extra: CallExtra,
  elicitation: boolean | undefined,
): ClientAsks["onAsk"] {
  // A tool's questions go to the client of this call, if it can answer them.
  const caps = server.getClientCapabilities() ?? {};
  // `ended` aborts when the call returns: a question still open is withdrawn.
  return async (kind, raw, ended) => {
    const { method, capability } = ASK_METHODS[kind];
    const params = unkeyed(raw).params;
    if (kind === "sample" && !caps.sampling) {
      throw new Error("the client does not support sampling (sampling/createMessage)");
    }
    // Sampling with tools (2025-11-25): only a client that says so; its answer may be an array.
    if (kind === "sample" && samplesWithTools(params) && !caps.sampling?.tools) {
      throw new Error("the client does not support sampling with tools (sampling.tools)");
    }
    if (kind === "elicit" && (!caps.elicitation || elicitation === false)) {
      throw new Error("the client cannot be asked here (no elicitation)");
    }
    if (!caps[capability as keyof typeof caps]) {
      throw new Error(`the client does not support ${capability} (${method})`);
    }
    return await extra.sendRequest(
      { method, params },
      {
        signal: ended ? AbortSignal.any([extra.signal, ended]) : extra.signal,
        timeout: _CONFIRM_TIMEOUT_MS,
      },
    );
  };
}

/**
 * Whether a sampling request uses tools (2025-11-25): it offers `tools` or a
 * `toolChoice`, or a message holds tool use or tool results. Its answer may
 * then be a content array with tool use, and only a client with
 * `sampling.tools` is asked.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { samplesWithTools } from "./_client_asks.ts";
 * assert.equal(samplesWithTools({ messages: [], maxTokens: 5 }), false);
 * assert.equal(samplesWithTools({ messages: [], maxTokens: 5, tools: [] }), true);
 * const result = { role: "user", content: [{ type: "tool_result", toolUseId: "1", content: [] }] };
 * assert.equal(samplesWithTools({ messages: [result], maxTokens: 5 }), true);
 * ```
 */
export function samplesWithTools(params: unknown): boolean {
  if (typeof params !== "object" || params === null) return false;
  const p = params as { tools?: unknown; toolChoice?: unknown; messages?: unknown };
  if (p.tools !== undefined || p.toolChoice !== undefined) return true;
  if (!Array.isArray(p.messages)) return false;
  return p.messages.some((m) => {
    const content = (m as { content?: unknown } | null)?.content;
    const blocks = Array.isArray(content) ? content : [content];
    return Array.isArray(content) ||
      blocks.some((b) =>
        ["tool_use", "tool_result"].includes((b as { type?: string })?.type ?? "")
      );
  });
}
