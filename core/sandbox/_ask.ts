/**
 * A tool asks the client that made its call (sampling, elicitation): the
 * host answers the sandbox through the call's own `onAsk`, never another
 * session's; without one, the tool gets a clear error.
 *
 * @module
 */
import type { AskKind, HostMessage, SandboxMessage } from "./protocol.ts";

/** The largest answer passed back into a sandbox. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/** Answer one `ask` message with `onAsk` (the call's), through `send`. */
export function answerAsk(
  msg: Extract<SandboxMessage, { type: "ask" }>,
  onAsk: ((kind: AskKind, params: unknown) => Promise<unknown>) | undefined,
  send: (m: HostMessage) => void,
): void {
  if (!onAsk) {
    send({
      type: "answer",
      askId: msg.askId,
      error: `no client can answer a ${msg.kind} request here (only an MCP client that ` +
        `supports it can)`,
    });
    return;
  }
  onAsk(msg.kind, msg.params).then(
    (result) => {
      const size = JSON.stringify(result ?? null).length;
      if (size > MAX_ANSWER_BYTES) {
        send({
          type: "answer",
          askId: msg.askId,
          error: `the answer is too large (${size} bytes)`,
        });
      } else send({ type: "answer", askId: msg.askId, result });
    },
    (err) => send({ type: "answer", askId: msg.askId, error: (err as Error).message }),
  );
}

/**
 * Refuse an ask for a call that does not run in this sandbox (it ended, or
 * never was): the sandbox gets an error; `onRefused` (the audit) hears of
 * the first 20 and then every 1000th, with the count, so that a flood
 * cannot fill the log. `n` counts this sandbox's refusals so far.
 */
export function refuseAsk(
  msg: Extract<SandboxMessage, { type: "ask" }>,
  n: number,
  send: (m: HostMessage) => void,
  onRefused: ((kind: AskKind, reason: string) => void) | undefined,
): void {
  const kind = msg.kind === "elicit" || msg.kind === "roots" ? msg.kind : "sample";
  const reason = `no call with id ${
    String(msg.id).slice(0, 24)
  } is running in this sandbox: a ${kind} request is only possible while its own call runs`;
  try {
    send({ type: "answer", askId: msg.askId, error: reason });
  } catch { /* the sandbox is gone */ }
  if (n <= 20 || n % 1000 === 0) {
    onRefused?.(kind, n > 20 ? `${reason} (${n} refused so far)` : reason);
  }
}
