/**
 * What hosted MCP servers list besides tools: their resources, resource
 * templates and prompts, asked of the servers a caller may reach (started
 * in their sandboxes for the caller's principal), marked with their server,
 * scrubbed of secrets, and each read audited. One method per listing: a new
 * kind of listing is one more method here and one more handler in
 * core/mcp/hosted_resources.ts. Each server is asked on its own, within
 * {@link LIST_TIMEOUT_MS} ({@link gatherListings}): one that fails, hangs
 * or will not start is left out (and named to `onLeftOut`) instead of
 * failing or holding up the whole listing. The SDK client walks a listing's
 * pages (at most `MAX_LIST_PAGES` of ./hosted_server.ts: a server with more
 * is left out) and is never let answer from its cache: every listing and
 * read asks the server.
 *
 * @module
 */
import type { Client } from "@modelcontextprotocol/client";
import { scrubDeep, scrubText } from "../base/mod.ts";
import { askingThrough } from "./_asking_through.ts";
import type { HostedCall } from "./hosted_server.ts";
import { offeredName } from "./_hosted_tools.ts";

/** Who asks: the servers it may reach (absent: all) and its identity, for the audit. */
export interface HostedCaller {
  only?: (server: string) => boolean;
  identity?: string;
  /** Hears the servers left out of a listing (failed or timed out), and why. */
  onLeftOut?: (left: LeftOut[]) => void;
  /** Answers a server's questions (sampling, elicitation) while it serves this caller's request. */
  onAsk?: HostedCall["onAsk"];
}

/** How long one server may take to answer one listing (all its pages, its start included). */
export const LIST_TIMEOUT_MS = 5_000;

/** The SDK client's cache is never used: each listing and read is the server's answer now. */
const _ASK = { cacheMode: "bypass" } as const;

/** A server left out of a listing, and why. */
export interface LeftOut {
  server: string;
  reason: string;
}

/** One server's part of a listing: its items, or undefined when it offers none. */
export type ListPart<T> = (signal: AbortSignal) => Promise<T[] | undefined>;

/** What {@link HostedListings} needs of the hosted servers. */
export interface HostedListingsOptions {
  /** The running clients of the servers that offer `what`, pass `only`, started for `session`. */
  clients(
    what: "resources" | "prompts",
    session: string,
    only?: (server: string) => boolean,
  ): Promise<Array<[string, Client]>>;
  /**
   * Each server that may start and passes `only`, for `session`, and how to
   * start it (its client; its secrets join {@link HostedListingsOptions.secrets}).
   */
  starts(
    session: string,
    only?: (server: string) => boolean,
  ): Promise<Array<[string, () => Promise<Client>]>>;
  /** The secrets scrubbed from what servers answer (grows as servers start). */
  secrets(): Set<string>;
  /** Audit one read (`resource`, `prompt`) of `server`. */
  event(
    server: string,
    kind: string,
    detail: string,
    who: { session?: string; identity?: string },
  ): void;
}

/** The listings of one set of hosted servers. */
export class HostedListings {
  readonly #o: HostedListingsOptions;
  /** Which server listed each resource URI (a read goes to it). */
  readonly #uris = new Map<string, string>();

  constructor(options: HostedListingsOptions) {
    this.#o = options;
  }

  /**
   * The resources (or templates) of every server that may start, marked with
   * their server; each server asked on its own (see {@link gatherListings}).
   */
  async listResources(
    templates: boolean,
    session: string,
    caller: HostedCaller = {},
  ): Promise<Array<Record<string, unknown>>> {
    const parts = await this.#gather(
      "resources",
      session,
      caller,
      async (client, signal) => {
        const o = { signal, timeout: LIST_TIMEOUT_MS, ..._ASK };
        const items = templates
          ? (await client.listResourceTemplates(undefined, o)).resourceTemplates
          : (await client.listResources(undefined, o)).resources;
        return items as Array<Record<string, unknown>>;
      },
    );
    const out: Array<Record<string, unknown>> = [];
    for (const [name, r] of parts) {
      for (const x of r) {
        if (!templates) this.#uris.set(String(x.uri), name);
        out.push({ ...x, _meta: { ...(x._meta as object ?? {}), "corral/server": name } });
      }
    }
    return scrubDeep(out, this.#o.secrets());
  }

  /** Read a resource from the server that listed it (or the only one with resources). */
  async readResource(
    uri: string,
    session: string,
    caller: HostedCaller = {},
  ): Promise<Record<string, unknown>> {
    const clients = await this.#o.clients("resources", session, caller.only);
    const name = this.#uris.get(uri) ?? (clients.length === 1 ? clients[0][0] : undefined);
    const client = clients.find(([n]) => n === name)?.[1];
    if (!client) throw new TypeError(`no hosted server lists the resource "${uri}"`);
    this.#o.event(name!, "resource", uri, { session, identity: caller.identity });
    return scrubDeep(await client.readResource({ uri }, _ASK), this.#o.secrets());
  }

  /** The prompts of every server that may start, named `<server>_<name>` when names collide. */
  async listPrompts(
    session: string,
    caller: HostedCaller = {},
  ): Promise<Array<Record<string, unknown>>> {
    return (await this.#prompts(session, caller)).map(([p]) => p);
  }

  /** Get a prompt by the name {@link listPrompts} gave it (to the same caller). */
  async getPrompt(
    offered: string,
    args: Record<string, string> | undefined,
    session: string,
    caller: HostedCaller = {},
  ): Promise<Record<string, unknown>> {
    // Named again for this caller: another caller's servers may name prompts otherwise.
    const hit = (await this.#prompts(session, caller)).find(([p]) => p.name === offered);
    if (!hit) throw new TypeError(`no hosted server offers the prompt "${offered}"`);
    const [, name, prompt, client] = hit;
    this.#o.event(name, "prompt", prompt, { session, identity: caller.identity });
    const r = await askingThrough(
      client,
      caller.onAsk,
      () => client.getPrompt({ name: prompt, ...(args ? { arguments: args } : {}) }),
    );
    return scrubDeep(r, this.#o.secrets());
  }

  /**
   * Complete an argument of a prompt (by the name {@link listPrompts} gave
   * it) or of a resource template, asked of the server that offers it.
   */
  async complete(
    params: Record<string, unknown>,
    session: string,
    caller: HostedCaller = {},
  ): Promise<Record<string, unknown>> {
    const ref = (params.ref ?? {}) as Record<string, unknown>;
    if (ref.type === "ref/prompt") {
      const hit = (await this.#prompts(session, caller)).find(([p]) => p.name === ref.name);
      if (!hit) throw new TypeError(`no hosted server offers the prompt "${ref.name}"`);
      const [, , prompt, client] = hit;
      const r = await client.complete({ ...params, ref: { ...ref, name: prompt } } as never);
      return scrubDeep(r, this.#o.secrets());
    }
    const clients = await this.#o.clients("resources", session, caller.only);
    for (const [, client] of clients) {
      const templates = (await client.listResourceTemplates(undefined, _ASK)).resourceTemplates;
      if (!templates.some((t) => t.uriTemplate === ref.uri)) continue;
      return scrubDeep(await client.complete(params as never), this.#o.secrets());
    }
    throw new TypeError(`no hosted server offers the resource template "${ref.uri}"`);
  }

  /** Subscribe to (or unsubscribe from) a resource, at the server that listed it. */
  async subscribe(
    uri: string,
    on: boolean,
    session: string,
    caller: HostedCaller = {},
  ): Promise<Record<string, unknown>> {
    const clients = await this.#o.clients("resources", session, caller.only);
    const name = this.#uris.get(uri) ?? (clients.length === 1 ? clients[0][0] : undefined);
    const client = clients.find(([n]) => n === name)?.[1];
    if (!client) throw new TypeError(`no hosted server lists the resource "${uri}"`);
    if (!client.getServerCapabilities()?.resources?.subscribe) return {};
    return on ? await client.subscribeResource({ uri }) : await client.unsubscribeResource({ uri });
  }

  /** Each prompt offered, its server, its own name there and the server's client. */
  async #prompts(
    session: string,
    caller: HostedCaller,
  ): Promise<Array<[Record<string, unknown>, string, string, Client]>> {
    const clients = new Map<string, Client>();
    const parts = await this.#gather("prompts", session, caller, async (client, signal, name) => {
      clients.set(name, client);
      return (await client.listPrompts(undefined, { signal, timeout: LIST_TIMEOUT_MS, ..._ASK }))
        .prompts;
    });
    const out: Array<[Record<string, unknown>, string, string, Client]> = [];
    const taken = new Set<string>();
    for (const [name, prompts] of parts) {
      for (const p of prompts) {
        const offered = offeredName(name, p.name, (n) => taken.has(n));
        taken.add(offered);
        const client = clients.get(name)!;
        out.push([scrubDeep({ ...p, name: offered }, this.#o.secrets()), name, p.name, client]);
      }
    }
    return out;
  }

  /**
   * Every reachable server's part of a listing of `what`, each started and
   * asked on its own within {@link LIST_TIMEOUT_MS}; those left out go to
   * `caller.onLeftOut`, scrubbed of secrets.
   */
  async #gather<T>(
    what: "resources" | "prompts",
    session: string,
    caller: HostedCaller,
    list: (client: Client, signal: AbortSignal, name: string) => Promise<T[]>,
  ): Promise<Array<[string, T[]]>> {
    const starts = await this.#o.starts(session, caller.only);
    const { parts, leftOut } = await gatherListings<T>(
      starts.map(([name, start]) => [name, async (signal) => {
        const client = await start();
        return client.getServerCapabilities()?.[what]
          ? await list(client, signal, name)
          : undefined;
      }]),
    );
    if (leftOut.length && caller.onLeftOut) {
      const secrets = this.#o.secrets();
      caller.onLeftOut(
        leftOut.map((l) => ({ server: l.server, reason: scrubText(l.reason, secrets) })),
      );
    }
    return parts;
  }
}

/**
 * Ask every server for its part at once, each within `timeoutMs`; the parts
 * in the servers' order, and those left out (failed or timed out).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { gatherListings } from "./hosted_listings.ts";
 * const { parts, leftOut } = await gatherListings([
 *   ["a", () => Promise.resolve([1, 2])],
 *   ["b", () => Promise.reject(new Error("down"))],
 *   ["c", () => new Promise<number[]>(() => {})],
 *   ["d", () => Promise.resolve(undefined)],
 * ], 50);
 * assert.deepEqual(parts, [["a", [1, 2]]]);
 * assert.deepEqual(leftOut.map((l) => l.server), ["b", "c"]);
 * assert.match(leftOut[1].reason, /did not answer within 50 ms/);
 * ```
 */
export async function gatherListings<T>(
  servers: Array<[name: string, part: ListPart<T>]>,
  timeoutMs = LIST_TIMEOUT_MS,
): Promise<{ parts: Array<[string, T[]]>; leftOut: LeftOut[] }> {
  const settled = await Promise.all(servers.map(([name, part]) => _within(name, part, timeoutMs)));
  const parts: Array<[string, T[]]> = [];
  const leftOut: LeftOut[] = [];
  for (const [i, s] of settled.entries()) {
    const server = servers[i][0];
    if ("reason" in s) leftOut.push({ server, reason: s.reason });
    else if (s.items) parts.push([server, s.items]);
  }
  return { parts, leftOut };
}

async function _within<T>(
  name: string,
  part: ListPart<T>,
  timeoutMs: number,
): Promise<{ items: T[] | undefined } | { reason: string }> {
  const abort = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<{ reason: string }>((resolve) => {
    timer = setTimeout(() => {
      abort.abort();
      resolve({ reason: `server "${name}" did not answer within ${timeoutMs} ms` });
    }, timeoutMs);
  });
  try {
    return await Promise.race([
      part(abort.signal).then(
        (items) => ({ items }),
        (err) => ({ reason: `server "${name}": ${(err as Error).message}` }),
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
