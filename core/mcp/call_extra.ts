/**
 * What the MCP SDK hands a request handler besides the request: the
 * cancellation signal, `_meta`, and the way back to the client of this
 * request (notifications and requests of its own).
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/shared/protocol"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type {
  Notification,
  Request,
  ServerNotification,
  ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";

/** The `extra` of a request handler on corral's `Server`. */
export type CallExtra = RequestHandlerExtra<
  ServerRequest | Request,
  ServerNotification | Notification
>;
