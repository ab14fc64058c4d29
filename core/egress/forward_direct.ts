/**
 * Inside a hosted npm server's own Deno process (loaded by `deno run
 * --preload` before the server): a `node:net` connection to one of its
 * forwarders (./egress_forward.ts) goes straight to the sandbox's egress
 * proxy on its unix socket, as `CONNECT host:port`, instead of through the
 * bridge's forwarder: the same proxy decides, connects and audits it, with
 * one process fewer to wake on every round trip. What the server sees is a
 * socket to `host:port` that connects once the proxy said 200; a refusal is
 * `ECONNREFUSED`. Any other connection (another host, a unix path, a TLS
 * socket's own connect) is left as it is, and so is every client that is not
 * `node:net`: those reach the bridge's forwarder, as before.
 *
 * Its settings come in the variable `CORRAL_DIRECT_FORWARDS`, which it
 * removes from the server's environment. It imports only `node:net` and
 * ./egress_forward.ts (which imports nothing): it runs inside the sandbox.
 *
 * @module
 */
import net from "node:net";
import { DIRECT_FORWARDS_VAR, type DirectForwards, type Forward } from "./egress_forward.ts";

/** The largest proxy reply head read before the bytes flow. */
const _MAX_HEAD = 16 * 1024;

// deno-lint-ignore no-explicit-any
type _Socket = any;

/**
 * The `host:port` a connection to `host` and `port` stands for, if one of
 * `forwards` listens there or is granted by that name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { forwardTarget } from "./forward_direct.ts";
 * const forwards = [{ host: "db.internal", port: 5432, listen: "127.0.0.2" }];
 * assert.equal(forwardTarget(forwards, "127.0.0.2", 5432), "db.internal:5432");
 * assert.equal(forwardTarget(forwards, "DB.internal", 5432), "db.internal:5432");
 * assert.equal(forwardTarget(forwards, "db.internal", 5433), undefined);
 * ```
 */
export function forwardTarget(
  forwards: readonly Forward[],
  host: string,
  port: number,
): string | undefined {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  const local = h === "localhost" ? "127.0.0.1" : h;
  const f = forwards.find((f) => f.port === port && (f.host === h || f.listen === local));
  return f && (f.host.includes(":") ? `[${f.host}]:${f.port}` : `${f.host}:${f.port}`);
}

/**
 * `connect`'s arguments as node takes them: (options, cb), (port, host?, cb?),
 * a path, or node's own normalized array; with the callback among them.
 */
function _connectArgs(
  args: unknown[],
): { port?: number; host?: string; path?: unknown; cb?: () => void } {
  const a = Array.isArray(args[0]) ? args[0] as unknown[] : args;
  const cb = a.find((x) => typeof x === "function") as (() => void) | undefined;
  if (a[0] !== null && typeof a[0] === "object") {
    return { ...a[0] as { port?: number; host?: string; path?: unknown }, cb };
  }
  if (typeof a[0] === "number" || (typeof a[0] === "string" && /^\d+$/.test(a[0]))) {
    return { port: Number(a[0]), host: typeof a[1] === "string" ? a[1] : undefined, cb };
  }
  return { path: a[0], cb };
}

/**
 * Make `node:net` sockets to `forwards` connect through the proxy at
 * `socket`. Returns a function that undoes it.
 */
export function connectDirect(socket: string, forwards: readonly Forward[]): () => void {
  const proto = net.Socket.prototype as _Socket;
  const original = proto.connect;
  proto.connect = function (this: _Socket, ...args: unknown[]) {
    // A TLS socket's own connect is left to the bridge's forwarder (its bytes are not clear).
    if (this.encrypted === true) return original.apply(this, args);
    const o = _connectArgs(args);
    const port = Number(o.port);
    const host = String(o.host ?? "localhost");
    const target = o.path === undefined && Number.isInteger(port)
      ? forwardTarget(forwards, host, port)
      : undefined;
    if (!target) return original.apply(this, args);
    _throughProxy(this, target, host, port);
    return original.call(this, { path: socket }, ...(o.cb ? [o.cb] : []));
  };
  return () => proto.connect = original;
}

/**
 * Hold `sock`'s `connect` until the proxy's answer: send the `CONNECT` head
 * when the unix socket is up, read the reply head off the first bytes, then
 * say connected (or fail as a refused connection would).
 */
function _throughProxy(sock: _Socket, target: string, host: string, port: number): void {
  const emit = sock.emit;
  const push = sock.push;
  let head = new Uint8Array(0);
  const done = () => {
    sock.emit = emit;
    sock.push = push;
  };
  sock.emit = function (event: string, ...rest: unknown[]) {
    if (event === "ready") return true;
    if (event === "close") done();
    if (event !== "connect") return emit.call(this, event, ...rest);
    // Straight to the socket: a write the client made while connecting waits in its
    // stream for the `connect` held here, and the head goes before it.
    const ask = `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nX-Corral-Forward: direct\r\n\r\n`;
    sock._writeGeneric(false, new TextEncoder().encode(ask), "buffer", () => {});
    // A read asked for while connecting waits for a `connect` held here: start it now
    // (node's `_read` starts the handle's reading once).
    sock._read(_MAX_HEAD);
    return true;
  };
  sock.push = function (chunk: Uint8Array | null, encoding?: string) {
    if (chunk === null) {
      done();
      sock.destroy(_refused(target));
      return false;
    }
    const joined = new Uint8Array(head.length + chunk.length);
    joined.set(head);
    joined.set(chunk, head.length);
    head = joined;
    const end = _headEnd(head);
    if (end < 0 && head.length < _MAX_HEAD) return true;
    done();
    const status = new TextDecoder().decode(head.subarray(0, Math.max(end, 0)));
    if (end < 0 || !/^HTTP\/1\.[01] 200 /.test(status)) {
      sock.destroy(_refused(target));
      return false;
    }
    Object.defineProperties(sock, {
      remoteAddress: { value: host, configurable: true },
      remotePort: { value: port, configurable: true },
    });
    emit.call(sock, "connect");
    emit.call(sock, "ready");
    const rest = head.subarray(end + 4);
    return rest.length ? push.call(sock, rest, encoding) : true;
  };
}

function _headEnd(b: Uint8Array): number {
  for (let i = 0; i + 3 < b.length; i++) {
    if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) return i;
  }
  return -1;
}

function _refused(target: string): Error {
  return Object.assign(new Error(`connect ECONNREFUSED ${target}`), {
    code: "ECONNREFUSED",
    errno: -111,
    syscall: "connect",
  });
}

/** Read and remove the settings from the environment, and install them. */
function _install(): void {
  const raw = Deno.env.get(DIRECT_FORWARDS_VAR);
  if (raw === undefined) return;
  Deno.env.delete(DIRECT_FORWARDS_VAR);
  try {
    const { socket, forwards } = JSON.parse(raw) as DirectForwards;
    if (typeof socket === "string" && Array.isArray(forwards)) connectDirect(socket, forwards);
  } catch { /* unreadable: every connection goes through the bridge's forwarders */ }
}

_install();
