/**
 * 2026-07-28 custom parameter headers (SEP-2243): a tool whose input
 * schema marks a parameter with `"x-mcp-header": "Name"` is called with
 * that parameter's value also in the `Mcp-Param-Name` header (literal, or
 * `=?base64?…?=`), so that intermediaries can route on it. The v2 SDK
 * checks `Mcp-Method` and `Mcp-Name` but not these, so corral does, before
 * the request is served: a header missing while the body holds the value,
 * one that is not valid Base64, or one that differs from the body is
 * refused with HTTP 400 and `-32020` (HeaderMismatch).
 *
 * @module
 */

/** The JSON-RPC code of a header that does not match the body. */
export const HEADER_MISMATCH = -32020;

/**
 * The refusal of `req` (its body `parsed`) when a `tools/call`'s custom
 * parameter headers do not match its arguments; `schemaOf` gives the
 * caller's view of a tool's input schema. Undefined: nothing to refuse.
 */
export function paramHeaderRefusal(
  req: Request,
  parsed: unknown,
  schemaOf: (tool: string) => Record<string, unknown> | undefined,
): Response | undefined {
  const m = parsed as { id?: unknown; method?: unknown; params?: Record<string, unknown> };
  if (!m || Array.isArray(m) || m.method !== "tools/call" || typeof m.params?.name !== "string") {
    return undefined;
  }
  const props = schemaOf(m.params.name)?.properties as Record<string, Record<string, unknown>>;
  const args = (m.params.arguments ?? {}) as Record<string, unknown>;
  for (const [param, spec] of Object.entries(props ?? {})) {
    const name = spec?.["x-mcp-header"];
    if (typeof name !== "string") continue;
    const raw = req.headers.get(`mcp-param-${name}`);
    const value = args[param];
    if (raw === null) {
      if (value === undefined || value === null) continue;
      return _refuse(m.id, `header Mcp-Param-${name} is missing; the body has ${param}`);
    }
    const decoded = _decode(raw);
    if (decoded === undefined) {
      return _refuse(m.id, `header Mcp-Param-${name} is not valid Base64`);
    }
    if (value === undefined || decoded !== String(value)) {
      return _refuse(m.id, `header Mcp-Param-${name} does not match the body's ${param}`);
    }
  }
  return undefined;
}

/** A header value: `=?base64?…?=` decoded (strict alphabet and padding), else as it is. */
function _decode(raw: string): string | undefined {
  const m = /^=\?base64\?(.*)\?=$/i.exec(raw.trim());
  if (!m) return raw.trim();
  const b64 = m[1];
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(b64)) {
    return undefined;
  }
  try {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function _refuse(id: unknown, message: string): Response {
  return Response.json(
    {
      jsonrpc: "2.0",
      id: id ?? null,
      error: { code: HEADER_MISMATCH, message: `Header mismatch: ${message}` },
    },
    { status: 400 },
  );
}
