/**
 * What a tool call asks the client of that call: confirmation of a tool
 * that needs it (through elicitation), and a tool's own questions
 * (sampling, elicitation), only while the call runs.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/index"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  CreateMessageResultSchema,
  CreateMessageResultWithToolsSchema,
  ElicitResultSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { ToolInfo } from "../registry/registry.ts";
import type { CallExtra } from "./call_extra.ts";

/** A person answers: allow longer than the SDK's 60 s default. */
const _CONFIRM_TIMEOUT_MS = 10 * 60_000;

/** How one call asks its client (RegistryCallOptions.confirm and onAsk). */
export interface ClientAsks {
  /** Ask the client to confirm a run; undefined when it cannot be asked. */
  confirm?: (tool: ToolInfo, args: unknown) => Promise<boolean>;
  /** Put a tool's question to the client; `ended` withdraws it when the call returns. */
  onAsk: (kind: "sample" | "elicit", params: unknown, ended?: AbortSignal) => Promise<unknown>;
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
    confirm: canElicit ? (tool, args) => _confirm(extra, tool, args) : undefined,
    onAsk: _asker(server, extra, elicitation),
  };
}

async function _confirm(extra: CallExtra, tool: ToolInfo, callArgs: unknown): Promise<boolean> {
  try {
    const answer = await extra.sendRequest(
      {
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
      },
      ElicitResultSchema,
      { signal: extra.signal, timeout: _CONFIRM_TIMEOUT_MS },
    );
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
  return async (kind, params, ended) => {
    if (kind === "sample" && !caps.sampling) {
      throw new Error("the client does not support sampling (sampling/createMessage)");
    }
    // Sampling with tools (2025-11-25): only a client that says so; its answer may be an array.
    const withTools = kind === "sample" && samplesWithTools(params);
    if (withTools && !caps.sampling?.tools) {
      throw new Error("the client does not support sampling with tools (sampling.tools)");
    }
    if (kind === "elicit" && (!caps.elicitation || elicitation === false)) {
      throw new Error("the client cannot be asked here (no elicitation)");
    }
    return await extra.sendRequest(
      {
        method: kind === "sample" ? "sampling/createMessage" : "elicitation/create",
        params: params as Record<string, unknown>,
      } as Parameters<CallExtra["sendRequest"]>[0],
      (kind === "elicit"
        ? ElicitResultSchema
        : withTools
        ? CreateMessageResultWithToolsSchema
        : CreateMessageResultSchema) as never,
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
 * import { samplesWithTools } from "./client_asks.ts";
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
