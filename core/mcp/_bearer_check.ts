/**
 * The server's own bearer token (without identities): every request must
 * send `Authorization: Bearer TOKEN`, compared without leaking its content
 * through timing.
 *
 * @module
 */
import { refuse } from "./_http_refusal.ts";

/** A 401 answer for a request without the token, else undefined; no token: no check. */
export function bearerCheck(token: string | undefined): (req: Request) => Response | undefined {
  const expected = token ? new TextEncoder().encode(`Bearer ${token}`) : undefined;
  return (req) => {
    if (
      expected &&
      !_sameBytes(new TextEncoder().encode(req.headers.get("authorization") ?? ""), expected)
    ) {
      return refuse(401, "Unauthorized: send Authorization: Bearer <token>", {
        "WWW-Authenticate": 'Bearer realm="corral"',
      });
    }
    return undefined;
  };
}

function _sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  // Length leaks, content does not: compare every byte whatever the first difference.
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a[i] ?? 0) ^ b[i];
  return diff === 0;
}
