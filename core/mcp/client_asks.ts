/**
 * What a tool call asks the client of that call: confirmation of a tool
 * that needs it (through elicitation), and a tool's own questions
 * (sampling, elicitation), only while the call runs.
 *
 * @module
 */
import type { ElicitResult, Server } from "@modelcontextprotocol/server";
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
 * of an input-required round (./input_rounds.ts) through `ask`; confirmation
 * only when this request declares elicitation.
 */
export function roundAsks(
  ask: (method: string, params: Record<string, unknown>) => Promise<unknown>,
  capabilities: Record<string, unknown>,
): ClientAsks {
  const send: ConfirmSend = (r) => ask(r.method, r.params);
  return {
    confirm: capabilities.elicitation !== undefined
      ? (tool, args) => _confirm(send, tool, args)
      : undefined,
    onAsk: (kind, params) =>
      ask(
        kind === "sample" ? "sampling/createMessage" : "elicitation/create",
        params as Record<string, unknown>,
      ),
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
  return async (kind, params, ended) => {
    if (kind === "sample" && !caps.sampling) {
      throw new Error("the client does not support sampling (sampling/createMessage)");
    }
    if (kind === "elicit" && (!caps.elicitation || elicitation === false)) {
      throw new Error("the client cannot be asked here (no elicitation)");
    }
    return await extra.sendRequest(
      {
        method: kind === "sample" ? "sampling/createMessage" : "elicitation/create",
        params: params as Record<string, unknown>,
      },
      {
        signal: ended ? AbortSignal.any([extra.signal, ended]) : extra.signal,
        timeout: _CONFIRM_TIMEOUT_MS,
      },
    );
  };
}
