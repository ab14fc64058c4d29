/**
 * Reading peers off raw connections, bounded: an HTTP/1.1 request head and body
 * as the egress proxy reads them (checked against llhttp by a differential fuzz
 * test), writing and copying on connections, and timing a peer fairly.
 *
 * @module
 */
export { closeConn, copyConn, writeAll } from "./conn_io.ts";
export { MAX_HEAD_BYTES, readHttpHead } from "./http_head.ts";
export { BodyReader, type Framing, parseRequestHead, type RequestHead } from "./http_request.ts";
export { PeerClock } from "./peer_clock.ts";
