/**
 * How the HTTP server refuses a request: a JSON-RPC error with an HTTP
 * status, and for 413 a connection closed without reading the rest of the
 * body.
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
 * A 413 ends the TCP connection: the rest of an oversized (chunked) body is
 * never read. Deno.serve keeps a connection open while a request body is
 * unread, `connection: close` notwithstanding, so the answer's body ends in
 * an error after its text, which makes the server drop the connection.
 */
export function closeOn413(req: Request, res: Response): Response {
  if (res.status !== 413) return res;
  if (req.body && !req.body.locked) req.body.cancel().catch(() => {});
  let text: Promise<Uint8Array> | undefined;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (!text) {
        text = res.bytes();
        c.enqueue(await text);
      } else c.error(new Error("oversized request: connection closed"));
    },
  });
  const headers = new Headers(res.headers);
  headers.set("connection", "close");
  headers.delete("content-length");
  return new Response(body, { status: 413, statusText: res.statusText, headers });
}
