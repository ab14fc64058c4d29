/**
 * Listening: the HTTP server with its limits (./_http_front.ts) answering
 * every request with the handler. A port that cannot be had is a
 * {@link ConfigError}.
 *
 * @module
 */
import { ConfigError } from "../tool/mod.ts";
import { type HttpFront, listenFront } from "./_http_front.ts";
import { closeOn413 } from "./_http_refusal.ts";

/** Where and how to listen. */
export interface ListenOptions {
  hostname: string;
  port: number;
  headTimeoutMs?: number;
  maxConnsPerClient?: number;
  maxConns?: number;
  bodyTimeoutMs?: number;
  minBodyRate?: number;
}

/** Listen with `handle` answering every request (a 413 closes its connection). */
export async function listenHttp(
  options: ListenOptions,
  handle: (req: Request) => Promise<Response>,
): Promise<HttpFront> {
  const { hostname, port } = options;
  try {
    return await listenFront(options, async (req) => closeOn413(await handle(req)));
  } catch (err) {
    const code = (err as { code?: string }).code ?? "";
    if (
      /^(EADDRINUSE|EADDRNOTAVAIL|EACCES|EPERM|EINVAL|ENOTFOUND|EAI_)/.test(code) ||
      err instanceof Deno.errors.AddrInUse || err instanceof Deno.errors.PermissionDenied ||
      err instanceof Deno.errors.AddrNotAvailable || err instanceof Deno.errors.NotCapable
    ) {
      throw new ConfigError(`cannot listen on ${hostname}:${port}: ${(err as Error).message}`);
    }
    throw err;
  }
}
