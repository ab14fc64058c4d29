/**
 * Listings gathered from several hosted servers at once (resources,
 * resource templates, prompts): each server is asked on its own, within a
 * time limit, so that one that fails, hangs or will not start is left out
 * (and named) instead of failing or holding up the whole listing. A
 * resource is read from the server that listed it, a prompt got from the
 * server that offers it (prefixed with its server when names collide).
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/client/index"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { scrubDeep, scrubText } from "../guard/redact.ts";
import type { HostedServer } from "./hosted_server.ts";
import { offeredName } from "./hosted_tools.ts";

/** How long one server may take to answer one listing (all its pages). */
export const LIST_TIMEOUT_MS = 5_000;

/** Pages of one listing read at most. */
export const MAX_LIST_PAGES = 100;

/** A server left out of a listing, and why. */
export interface LeftOut {
  server: string;
  reason: string;
}

/** One server's part of a listing: its items, or undefined when it offers none. */
export type ListPart<T> = (signal: AbortSignal) => Promise<T[] | undefined>;

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

/**
 * Every page of a listing: `page(cursor)` until it gives no next cursor
 * (at most {@link MAX_LIST_PAGES}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { allPages } from "./hosted_listings.ts";
 * const pages: Record<string, { items: number[]; next?: string }> = {
 *   "": { items: [1], next: "b" }, b: { items: [2] },
 * };
 * assert.deepEqual(await allPages((c) => Promise.resolve(pages[c ?? ""])), [1, 2]);
 * ```
 */
export async function allPages<T>(
  page: (cursor?: string) => Promise<{ items: T[]; next?: string }>,
): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let n = 0; n < MAX_LIST_PAGES; n++) {
    const r = await page(cursor);
    out.push(...r.items);
    cursor = r.next;
    if (!cursor) break;
  }
  return out;
}

/** What {@link HostedListings} needs from the servers. */
export interface ListingsDeps {
  /** The server instances of a session (principal) that may start, by name. */
  listable(session: string): Promise<Array<[string, HostedServer]>>;
  /** Secret values: a started server's are added; everything listed is scrubbed of them. */
  secrets: Set<string>;
  /** A resource read or a prompt got (the audit log). */
  onRead(server: string, kind: "resource" | "prompt", detail: string, session: string): void;
}

/** The resources and prompts of the hosted servers, gathered per server. */
export class HostedListings {
  readonly #deps: ListingsDeps;
  /** Resource URI and offered prompt name → server. */
  #uris = new Map<string, string>();
  #prompts = new Map<string, [string, string]>();

  constructor(deps: ListingsDeps) {
    this.#deps = deps;
  }

  /**
   * The resources (or templates) of every server of `session` that may
   * start (started for this), marked with their server. Each server is
   * asked on its own within {@link LIST_TIMEOUT_MS}: one that fails or times
   * out is left out and passed to `onLeftOut`.
   */
  async listResources(
    templates: boolean,
    session: string,
    onLeftOut?: (left: LeftOut[]) => void,
  ): Promise<Array<Record<string, unknown>>> {
    const { parts, leftOut } = await gatherListings(
      await this.#parts("resources", session, (client, signal) =>
        allPages(async (cursor) => {
          const o = { signal, timeout: LIST_TIMEOUT_MS };
          const p = cursor ? { cursor } : {};
          const r = templates
            ? await client.listResourceTemplates(p, o)
            : await client.listResources(p, o);
          const items = "resourceTemplates" in r ? r.resourceTemplates : r.resources;
          return { items: items as Array<Record<string, unknown>>, next: r.nextCursor };
        })),
    );
    const out: Array<Record<string, unknown>> = [];
    for (const [name, r] of parts) {
      for (const x of r) {
        if (!templates) this.#uris.set(String(x.uri), name);
        out.push({ ...x, _meta: { ...(x._meta as object ?? {}), "corral/server": name } });
      }
    }
    this.#leftOut(leftOut, onLeftOut);
    return scrubDeep(out, this.#deps.secrets);
  }

  /** Read a resource from the server that listed it (or the only one with resources). */
  async readResource(uri: string, session: string): Promise<Record<string, unknown>> {
    const clients = await this.#clients("resources", session);
    const name = this.#uris.get(uri) ?? (clients.length === 1 ? clients[0][0] : undefined);
    const client = clients.find(([n]) => n === name)?.[1];
    if (!client) throw new TypeError(`no hosted server lists the resource "${uri}"`);
    this.#deps.onRead(name!, "resource", uri, session);
    return scrubDeep(await client.readResource({ uri }), this.#deps.secrets);
  }

  /**
   * The prompts of every server of `session` that may start, named
   * `<server>_<name>` when names collide; a server that fails or times out
   * is left out, as for {@link HostedListings.listResources}.
   */
  async listPrompts(
    session: string,
    onLeftOut?: (left: LeftOut[]) => void,
  ): Promise<Array<Record<string, unknown>>> {
    const { parts, leftOut } = await gatherListings(
      await this.#parts("prompts", session, (client, signal) =>
        allPages(async (cursor) => {
          const r = await client.listPrompts(cursor ? { cursor } : {}, {
            signal,
            timeout: LIST_TIMEOUT_MS,
          });
          return { items: r.prompts, next: r.nextCursor };
        })),
    );
    const out: Array<Record<string, unknown>> = [];
    this.#prompts.clear();
    for (const [name, prompts] of parts) {
      for (const p of prompts) {
        const offered = offeredName(name, p.name, (n) => this.#prompts.has(n));
        this.#prompts.set(offered, [name, p.name]);
        out.push({ ...p, name: offered });
      }
    }
    this.#leftOut(leftOut, onLeftOut);
    return scrubDeep(out, this.#deps.secrets);
  }

  /** Get a prompt by the name {@link HostedListings.listPrompts} gave it. */
  async getPrompt(
    offered: string,
    args: Record<string, string> | undefined,
    session: string,
  ): Promise<Record<string, unknown>> {
    if (!this.#prompts.size) await this.listPrompts(session);
    const [name, prompt] = this.#prompts.get(offered) ?? [];
    const client = (await this.#clients("prompts", session)).find(([n]) => n === name)?.[1];
    if (!client || !prompt) throw new TypeError(`no hosted server offers the prompt "${offered}"`);
    this.#deps.onRead(name!, "prompt", prompt, session);
    const r = await client.getPrompt({ name: prompt, ...(args ? { arguments: args } : {}) });
    return scrubDeep(r, this.#deps.secrets);
  }

  /** The running clients of the servers that may start and offer `what`. */
  async #clients(what: "resources" | "prompts", session: string): Promise<Array<[string, Client]>> {
    const out: Array<[string, Client]> = [];
    for (const [name, server] of await this.#deps.listable(session)) {
      try {
        const client = await this.#started(server);
        if (client.getServerCapabilities()?.[what]) out.push([name, client]);
      } catch { /* failed: shown by corral list; the others still answer */ }
    }
    return out;
  }

  /** Each server's part of a listing of `what`: started, asked if it offers `what`. */
  async #parts<T>(
    what: "resources" | "prompts",
    session: string,
    list: (client: Client, signal: AbortSignal) => Promise<T[]>,
  ): Promise<Array<[string, ListPart<T>]>> {
    return (await this.#deps.listable(session)).map(([name, server]) => [name, async (signal) => {
      const client = await this.#started(server);
      return client.getServerCapabilities()?.[what] ? await list(client, signal) : undefined;
    }]);
  }

  async #started(server: HostedServer): Promise<Client> {
    const client = await server.ensure();
    for (const s of server.secrets) this.#deps.secrets.add(s);
    return client;
  }

  /** Servers left out of a listing: to the caller, scrubbed of secrets. */
  #leftOut(left: LeftOut[], to?: (left: LeftOut[]) => void): void {
    if (!left.length || !to) return;
    const secrets = this.#deps.secrets;
    to(left.map((l) => ({ server: l.server, reason: scrubText(l.reason, secrets) })));
  }
}
