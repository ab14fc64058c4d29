/**
 * Against DNS rebinding: a loopback server answers only to loopback Host
 * names, and a browser Origin must be a loopback one (on a loopback server)
 * or one the operator allowed.
 *
 * @module
 */
import { refuse } from "./_http_refusal.ts";
import { isLoopback } from "./_listen_address.ts";

/**
 * The Host and Origin check of a server bound to a `loopback` address or
 * not: a 403 answer for a refused request, else undefined.
 */
export function rebindingGuard(
  loopback: boolean,
  allowedOrigins: readonly string[] = [],
): (req: Request) => Response | undefined {
  const allowed = new Set(allowedOrigins.map((o) => o.replace(/\/$/, "")));
  return (req) => {
    // DNS rebinding: a loopback server only answers to loopback names.
    const host = req.headers.get("host") ?? "";
    if (loopback) {
      let name = "";
      try {
        name = new URL(`http://${host}`).hostname;
      } catch { /* malformed: refused below */ }
      if (!isLoopback(name)) return refuse(403, `Forbidden: Host "${host}" is not allowed`);
    }
    const origin = req.headers.get("origin");
    if (origin !== null && !_originAllowed(origin, allowed, loopback)) {
      return refuse(403, `Forbidden: Origin "${origin}" is not allowed`);
    }
    return undefined;
  };
}

function _originAllowed(origin: string, allowed: Set<string>, loopback: boolean): boolean {
  if (allowed.has(origin)) return true;
  try {
    const u = new URL(origin);
    return loopback && isLoopback(u.hostname) &&
      (u.protocol === "http:" || u.protocol === "https:");
  } catch {
    return false;
  }
}
