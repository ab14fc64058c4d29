/**
 * A free TCP port on 127.0.0.1: bound, then released again, so the caller
 * binds it (or hands it to a server it starts) right after.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { freePort } from "./free_port.ts";
 * const port = freePort();
 * const l = Deno.listen({ hostname: "127.0.0.1", port });
 * assert.equal((l.addr as Deno.NetAddr).port, port);
 * l.close();
 * ```
 *
 * @module
 */

/** A free TCP port on 127.0.0.1. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}
