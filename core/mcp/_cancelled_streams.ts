/**
 * A cancelled request's stream ends. Over Streamable HTTP each POST's
 * response is a stream that the server ends once every request it carried
 * is answered; a cancelled request is never answered (the MCP spec), and
 * the SDK client keeps reading the stream until it ends. So each cancelled
 * call held its connection for as long as the session lived: a day's
 * session reached the per-client connection cap (bench section 13, after
 * about 5,000 calls with one cancellation in 20) and was refused.
 *
 * Here the session's transport is watched: the requests each POST carried,
 * less those answered or cancelled; when the last of a POST's requests is
 * done and one of them was cancelled, its stream is closed (the SDK's
 * `closeSSEStream`).
 *
 * @module
 */
import type {
  JSONRPCMessage,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";

type _Id = string | number;

/**
 * Watch `transport` (connected: its `onmessage` set) and close a POST's
 * stream once every request it carried is answered or cancelled.
 *
 * @example
 * ```ts ignore
 * await mcp.connect(transport);
 * endCancelledStreams(transport);
 * ```
 */
export function endCancelledStreams(transport: WebStandardStreamableHTTPServerTransport): void {
  const open = new Map<_Id, Set<_Id>>(); // a request's id → its POST's requests not yet done
  const onmessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const m = message as { id?: _Id; method?: string; params?: { requestId?: _Id } };
    if (m.method !== undefined && m.id !== undefined) {
      // Every request of one POST shares its Request object: one set for them all.
      const post = extra?.request;
      let group = post ? _groups.get(post) : undefined;
      if (!group) {
        group = new Set();
        if (post) _groups.set(post, group);
      }
      group.add(m.id);
      open.set(m.id, group);
    }
    onmessage?.call(transport, message, extra);
    if (m.method === "notifications/cancelled" && m.params?.requestId !== undefined) {
      _done(transport, open, m.params.requestId);
    }
  };
  const send = transport.send.bind(transport);
  transport.send = async (message: JSONRPCMessage, options) => {
    await send(message, options);
    const m = message as { id?: _Id; method?: string };
    if (m.method === undefined && m.id !== undefined) _done(transport, open, m.id);
  };
}

const _groups = new WeakMap<Request, Set<_Id>>();

/**
 * Request `id` is answered or cancelled; the last of its POST's closes the
 * stream. The SDK closes it itself when every request was answered (then
 * it no longer knows `id`, and closing does nothing); not when one was
 * cancelled, whether before the others were answered or after.
 */
function _done(
  transport: WebStandardStreamableHTTPServerTransport,
  open: Map<_Id, Set<_Id>>,
  id: _Id,
): void {
  const group = open.get(id);
  if (!group) return;
  group.delete(id);
  open.delete(id);
  if (group.size === 0) transport.closeSSEStream(id);
}
