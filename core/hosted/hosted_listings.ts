/**
 * What hosted MCP servers list besides tools: their resources, resource
 * templates and prompts, asked of the servers a caller may reach (started
 * in their sandboxes for the caller's principal), marked with their server,
 * scrubbed of secrets, and each read audited. One method per listing: a new
 * kind of listing is one more method here and one more handler in
 * core/mcp/hosted_resources.ts.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/client/index"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { scrubDeep } from "../guard/redact.ts";
import { askingThrough, type HostedCall } from "./hosted_server.ts";
import { offeredName } from "./hosted_tools.ts";

/** Who asks: the servers it may reach (absent: all) and its identity, for the audit. */
export interface HostedCaller {
  only?: (server: string) => boolean;
  identity?: string;
  /** Answers a server's questions (sampling, elicitation) while it serves this caller's request. */
  onAsk?: HostedCall["onAsk"];
}

/** What {@link HostedListings} needs of the hosted servers. */
export interface HostedListingsOptions {
  /** The running clients of the servers that offer `what`, pass `only`, started for `session`. */
  clients(
    what: "resources" | "prompts",
    session: string,
    only?: (server: string) => boolean,
  ): Promise<Array<[string, Client]>>;
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

  /** The resources (or templates) of every server that may start, marked with their server. */
  async listResources(
    templates: boolean,
    session: string,
    caller: HostedCaller = {},
  ): Promise<Array<Record<string, unknown>>> {
    const out: Array<Record<string, unknown>> = [];
    for (const [name, client] of await this.#o.clients("resources", session, caller.only)) {
      const r = templates
        ? (await client.listResourceTemplates()).resourceTemplates
        : (await client.listResources()).resources;
      for (const x of r as Array<Record<string, unknown>>) {
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
    return scrubDeep(await client.readResource({ uri }), this.#o.secrets());
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
      const templates = (await client.listResourceTemplates()).resourceTemplates;
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
    const out: Array<[Record<string, unknown>, string, string, Client]> = [];
    const taken = new Set<string>();
    for (const [name, client] of await this.#o.clients("prompts", session, caller.only)) {
      for (const p of (await client.listPrompts()).prompts) {
        const offered = offeredName(name, p.name, (n) => taken.has(n));
        taken.add(offered);
        out.push([scrubDeep({ ...p, name: offered }, this.#o.secrets()), name, p.name, client]);
      }
    }
    return out;
  }
}
