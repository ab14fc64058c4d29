/**
 * How the HTTP server refuses a request: a JSON-RPC error with an HTTP
 * status; for 413 a connection closed without reading the rest of the
 * body; on the connection itself where the server has not answered.
 *
 * @module
 */

/** A JSON-RPC error answer (`code` -32000) with `status` and `headers`. */
export function refuse(
  status: number,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return Response.json(
    { jsonrpc: "2.0", error: { code: -32000, message }, id: null },
    { status, headers },
  );
}

/**
 * A 413 ends the connection: its answer says `Connection: close`, so the
 * rest of an oversized (chunked) body is never read.
 */
export function closeOn413(res: Response): Response {
  if (res.status !== 413) return res;
  const headers = new Headers(res.headers);
  headers.set("connection", "close");
  return new Response(res.body, { status: 413, statusText: res.statusText, headers });
}

const _PHRASE: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  503: "Service Unavailable",
};

/**
 * Answer on the connection itself, before or instead of the server's own
 * answer (a refused connection, a head or body too late, a request the
 * parser refused): the same JSON-RPC error as {@link refuse}, then the
 * connection ends.
 */
export function answerRaw(
  socket: { end(data: Uint8Array, cb?: () => void): unknown; destroy(): unknown },
  status: number,
  message: string,
): void {
  const body = JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null });
  const bytes = new TextEncoder().encode(body);
  const retry = status === 429 || status === 503 ? "Retry-After: 5\r\n" : "";
  const head = `HTTP/1.1 ${status} ${_PHRASE[status] ?? "Error"}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${bytes.length}\r\n${retry}` +
    "Connection: close\r\n\r\n";
  const all = new Uint8Array([...new TextEncoder().encode(head), ...bytes]);
  try {
    socket.end(all, () => socket.destroy());
  } catch {
    socket.destroy();
  }
}
