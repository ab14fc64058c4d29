/**
 * Listening: corral's own TCP front (./http_front.ts) times request heads
 * and caps connections per client; `Deno.serve` answers behind it on a
 * private unix socket. A port that cannot be had is a {@link ConfigError}.
 *
 * @module
 */
import { ConfigError } from "../tool/errors.ts";
import { type HttpFront, listenFront } from "./http_front.ts";
import { closeOn413, refuse } from "./http_refusal.ts";

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

/** The front and the server behind it (not yet started: call `front.start()`). */
export interface HttpListener {
  front: HttpFront;
  httpServer: Deno.HttpServer<Deno.UnixAddr>;
}

/** Listen with `handle` answering every request (a 413 closes its connection). */
export function listenHttp(
  options: ListenOptions,
  handle: (req: Request) => Promise<Response>,
): HttpListener {
  const { hostname, port } = options;
  try {
    const front = listenFront(options);
    const httpServer = Deno.serve({
      path: front.socket,
      onListen: () => {/* the caller prints the URL */},
      onError: (err) => refuse(500, `Internal error: ${(err as Error)?.message ?? err}`),
    }, async (req) => closeOn413(req, await handle(req)));
    return { front, httpServer };
  } catch (err) {
    if (
      err instanceof Deno.errors.AddrInUse || err instanceof Deno.errors.PermissionDenied ||
      err instanceof Deno.errors.AddrNotAvailable || err instanceof Deno.errors.NotCapable
    ) {
      throw new ConfigError(`cannot listen on ${hostname}:${port}: ${(err as Error).message}`);
    }
    throw err;
  }
}
