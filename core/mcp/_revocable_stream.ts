/**
 * An open event stream whose token stops being valid is closed: a GET
 * stream of a session sends server messages for as long as it is open, so
 * without a check a revoked (or expired) token would keep receiving them.
 * The token is checked again every few seconds while the stream is open;
 * at the first failed check the stream ends (the client, reconnecting with
 * the same token, gets 401).
 *
 * @module
 */

/** Default of the re-check period of an open stream: 5 s. */
export const DEFAULT_STREAM_RECHECK_MS = 5_000;

/**
 * `res` with its body ended as soon as `stillValid` answers false (or
 * throws: fail closed), checked every `everyMs` while the body is open.
 * A response that is not an event stream is returned as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { revocableStream } from "./_revocable_stream.ts";
 * const open = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(": hi\n\n")); } });
 * const res = new Response(open, { headers: { "content-type": "text/event-stream" } });
 * const watched = revocableStream(res, () => Promise.resolve(false), 10);
 * assert.equal(await watched.text(), ": hi\n\n"); // ends at the first failed check
 * ```
 */
export function revocableStream(
  res: Response,
  stillValid: () => Promise<boolean>,
  everyMs: number = DEFAULT_STREAM_RECHECK_MS,
): Response {
  const type = res.headers.get("content-type") ?? "";
  if (!res.body || !type.startsWith("text/event-stream")) return res;
  const reader = res.body.getReader();
  let timer: ReturnType<typeof setInterval> | undefined;
  let ended = false;
  const end = (controller: ReadableStreamDefaultController<Uint8Array>, reason: string) => {
    if (ended) return;
    ended = true;
    clearInterval(timer);
    try {
      controller.close();
    } catch { /* already closed or errored */ }
    reader.cancel(reason).catch(() => {});
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      timer = setInterval(async () => {
        const ok = await stillValid().catch(() => false);
        if (!ok) end(controller, "the token of this stream is no longer valid");
      }, everyMs);
    },
    async pull(controller) {
      const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (ended) return;
      if (next.done) end(controller, "done");
      else controller.enqueue(next.value);
    },
    cancel(reason) {
      ended = true;
      clearInterval(timer);
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
}
