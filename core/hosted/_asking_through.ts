/**
 * Which hosted server a running MCP client belongs to, so that a request
 * that is no tool call (`prompts/get`, ./hosted_listings.ts) has its
 * questions answered as a call's are. Kept apart from ./hosted_server.ts so
 * that the listings (loaded with every registry) do not load the hosted
 * servers' runtime (the MCP SDK's client, its schemas and Ajv) before a
 * server starts.
 *
 * @module
 */

/** How a request's questions (sampling, elicitation) are answered. */
export type AskAnswer = (kind: "sample" | "elicit", params: unknown) => Promise<unknown>;

/** What a running server offers: run a request whose questions `onAsk` answers. */
export interface AskingServer {
  asking<T>(onAsk: AskAnswer, run: () => Promise<T>): Promise<T>;
}

const _serverOf = new WeakMap<object, AskingServer>();

/** Record that `client` is `server`'s (when it starts). */
export function servedBy(client: object, server: AskingServer): void {
  _serverOf.set(client, server);
}

/**
 * Run `run` (a request to `client` that is no tool call: `prompts/get`)
 * with `onAsk` answering the server's questions (sampling, elicitation)
 * meanwhile, as a call's own client answers them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { askingThrough, servedBy } from "./_asking_through.ts";
 * const client = {};
 * let asked = false;
 * servedBy(client, { asking: (_onAsk, run) => (asked = true, run()) });
 * assert.equal(await askingThrough(client, async () => 1, async () => 2), 2);
 * assert.ok(asked);
 * ```
 */
export function askingThrough<T>(
  client: object,
  onAsk: AskAnswer | undefined,
  run: () => Promise<T>,
): Promise<T> {
  const server = _serverOf.get(client);
  return server && onAsk ? server.asking(onAsk, run) : run();
}
