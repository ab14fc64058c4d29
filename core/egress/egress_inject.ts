/**
 * Secrets injected at egress: a sandbox's environment holds a placeholder,
 * never the secret; its egress proxy puts the secret in where the operator
 * said, on the way out. For a sandbox holding such a secret, the proxy
 * terminates the TLS of every tunnel (`CONNECT`) with a certificate of the
 * sandbox's own CA (./sandbox_ca.ts, trusted there alone) and opens its own
 * TLS to the real server, checked against the operator's trust store
 * (./trust_store.ts). Then:
 *
 * - to one of the secret's `hosts`, in the first request's named header,
 *   a value holding the placeholder becomes `format` with the secret
 *   (`Bearer {}`); the request goes with `Connection: close`, so that each
 *   request of that host comes on a connection of its own and is seen;
 * - a placeholder on its way to any other host (in a header, a body, a
 *   plain TCP stream, or in clear to one of its own hosts) cuts the
 *   connection before those bytes leave: refused, and audited.
 *
 * TLS is offered as HTTP/1.1 only there (no `h2`). A client that pins a
 * server's certificate cannot be served.
 *
 * @module
 */
import { createSecureContext, TLSSocket } from "node:tls";
import { Duplex } from "node:stream";
import { closeConn, writeAll } from "../wire/mod.ts";
import type { SandboxCa } from "./sandbox_ca.ts";

/** A secret the proxy injects. */
export interface InjectedSecret {
  /** The host variable it came from (named in refusals, never its value). */
  name: string;
  /** What the sandbox holds instead. */
  placeholder: string;
  value: string;
  /** The hosts it goes to (names or addresses, any port). */
  hosts: string[];
  /** The request header it goes in. */
  header: string;
  /** The header's value, `{}` standing for the secret. */
  format: string;
}

/** What one connection through the injector came to. */
export interface InjectOutcome {
  bytesOut: number;
  bytesIn: number;
  /** Why it was cut (a placeholder to a host not its own). */
  refused?: string;
  /** The names of the secrets put in. */
  injected: string[];
}

/**
 * A placeholder for the secret named `name`: recognisable, random, and
 * long enough never to occur by chance.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { placeholderFor } from "./egress_inject.ts";
 * assert.match(placeholderFor("GITHUB_TOKEN"), /^corral-secret-GITHUB_TOKEN-[0-9a-f]{32}$/);
 * ```
 */
export function placeholderFor(name: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `corral-secret-${name}-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

const _MAX_HEAD = 64 * 1024;

/** The secrets of one sandbox and its CA: what its egress proxy injects. */
export class SecretInjector {
  readonly secrets: readonly InjectedSecret[];
  readonly #ca: SandboxCa;
  readonly #trust: string[];

  constructor(secrets: readonly InjectedSecret[], ca: SandboxCa, trust: string[]) {
    this.secrets = secrets;
    this.#ca = ca;
    this.#trust = trust;
  }

  /** The first secret whose placeholder is in `text` and may not go to `host` (clear: none may). */
  foreign(text: string, host: string, clear = false): InjectedSecret | undefined {
    return this.secrets.find((s) => text.includes(s.placeholder) && (clear || !_ownHost(s, host)));
  }

  /** Why a placeholder may not go where it was going: the refusal's reason. */
  refusal(s: InjectedSecret, host: string, port: number, clear = false): string {
    return clear && _ownHost(s, host)
      ? `refused: the placeholder of secret ${s.name} was sent to ${host}:${port} in clear; ` +
        `it is put in over TLS only`
      : `refused: the placeholder of secret ${s.name} was sent to ${host}:${port}, which is ` +
        `not one of its hosts (${s.hosts.join(", ")})`;
  }

  /**
   * Serve one tunnel to `host:port` at `address` whose client already got
   * its 200 and sent `first`: TLS terminated and opened again (when `first`
   * begins a TLS handshake), or the bytes as they are; watched both ways.
   */
  async tunnel(
    client: Deno.Conn,
    first: Uint8Array | Promise<Uint8Array | null>,
    host: string,
    port: number,
    address: string,
  ): Promise<InjectOutcome> {
    const out: InjectOutcome = { bytesOut: 0, bytesIn: 0, injected: [] };
    // A client that says nothing at first waits for the server (SMTP, SSH): in clear.
    const tls = first instanceof Uint8Array && first[0] === 0x16;
    let server: Deno.Conn | undefined;
    try {
      server = await Deno.connect({ hostname: address, port });
      if (!tls) {
        await this.#plain(client, first, server, host, port, out);
        return out;
      }
      const up = await Deno.startTls(server as Deno.TcpConn, {
        hostname: host.replace(/^\[|\]$/g, ""),
        ...(this.#trust.length ? { caCerts: this.#trust } : {}),
        alpnProtocols: ["http/1.1"],
      });
      server = up;
      const { cert, key } = await this.#ca.certFor(host.replace(/^\[|\]$/g, ""));
      await this.#terminated(client, first as Uint8Array, up, host, port, { cert, key }, out);
    } catch (err) {
      out.refused ??= `cannot connect: ${(err as Error).message}`;
    } finally {
      if (server) closeConn(server);
    }
    return out;
  }

  /** A tunnel in clear: no placeholder may pass it (not even to its own host). */
  async #plain(
    client: Deno.Conn,
    first: Uint8Array | Promise<Uint8Array | null>,
    server: Deno.Conn,
    host: string,
    port: number,
    out: InjectOutcome,
  ): Promise<void> {
    let tail = "";
    const check = (chunk: Uint8Array): boolean => {
      const text = tail + _latin1(chunk);
      const s = this.foreign(text, host, true);
      if (s) out.refused = this.refusal(s, host, port, true);
      tail = text.slice(-_longest(this.secrets));
      return !s;
    };
    const up = _pump(client, server, check, (n) => out.bytesOut += n, first);
    const down = _pump(server, client, () => true, (n) => out.bytesIn += n);
    // Cut both ways once one side refused or ended with nothing more to say.
    await up;
    if (out.refused) closeConn(client);
    await down;
  }

  /** TLS terminated here: the first request's head rewritten, the rest watched. */
  async #terminated(
    client: Deno.Conn,
    first: Uint8Array,
    up: Deno.Conn,
    host: string,
    port: number,
    cert: { cert: string; key: string },
    out: InjectOutcome,
  ): Promise<void> {
    const socket = new TLSSocket(_duplex(client, first), {
      isServer: true,
      secureContext: createSecureContext(cert),
      ALPNProtocols: ["http/1.1"],
    });
    const name = host.replace(/^\[|\]$/g, "");
    let head: Uint8Array | undefined = new Uint8Array(0);
    let tail = "";
    const done = new Promise<void>((resolve) => {
      const end = () => {
        socket.destroy();
        resolve();
      };
      socket.on("error", end);
      socket.on("close", end);
      socket.on("end", () => up.closeWrite?.().catch(() => {}));
      socket.on("data", (chunk: Uint8Array) => {
        socket.pause();
        this.#fromClient(chunk, name, port, out, {
          head,
          tail,
          setHead: (h) => head = h,
          setTail: (t) => tail = t,
        }).then(async (send) => {
          if (send === undefined) return end();
          if (send.length) {
            await writeAll(up, send);
            out.bytesOut += send.length;
          }
          socket.resume();
        }).catch(end);
      });
    });
    const back = (async () => {
      try {
        for await (const chunk of up.readable) {
          out.bytesIn += chunk.length;
          if (!socket.write(chunk)) await new Promise((r) => socket.once("drain", r));
        }
      } catch { /* closed */ }
      socket.end();
    })();
    await Promise.race([done, back.then(() => done)]);
  }

  /** What of the client's `chunk` goes on (undefined: cut the connection). */
  async #fromClient(
    chunk: Uint8Array,
    host: string,
    port: number,
    out: InjectOutcome,
    state: {
      head: Uint8Array | undefined;
      tail: string;
      setHead(h: Uint8Array | undefined): void;
      setTail(t: string): void;
    },
  ): Promise<Uint8Array | undefined> {
    await Promise.resolve();
    let bytes = chunk;
    if (state.head) {
      const all = _concat(state.head, chunk);
      const end = _latin1(all).indexOf("\r\n\r\n");
      if (end < 0) {
        if (all.length > _MAX_HEAD) return this.#cut(out, "a request head over 64 KiB");
        state.setHead(all);
        return new Uint8Array(0);
      }
      state.setHead(undefined);
      const rewritten = this.#rewrite(_latin1(all.subarray(0, end)), host, port, out);
      if (rewritten === undefined) return undefined;
      bytes = _concat(_bytes(rewritten + "\r\n\r\n"), all.subarray(end + 4));
      state.setTail("");
      // The rest of what came with the head: watched as the stream is.
      const rest = _latin1(all.subarray(end + 4));
      const s = this.foreign(rest, host);
      if (s) return this.#cut(out, this.refusal(s, host, port));
      state.setTail(rest.slice(-_longest(this.secrets)));
      return bytes;
    }
    const text = state.tail + _latin1(bytes);
    const s = this.foreign(text, host);
    if (s) return this.#cut(out, this.refusal(s, host, port));
    state.setTail(text.slice(-_longest(this.secrets)));
    return bytes;
  }

  /** The first request's head with each secret of this host put in its header. */
  #rewrite(head: string, host: string, port: number, out: InjectOutcome): string | undefined {
    const lines = head.split("\r\n");
    for (const s of this.secrets) {
      if (!_ownHost(s, host)) continue;
      const header = s.header.toLowerCase();
      for (let i = 1; i < lines.length; i++) {
        const colon = lines[i].indexOf(":");
        if (colon < 0 || lines[i].slice(0, colon).trim().toLowerCase() !== header) continue;
        if (!lines[i].includes(s.placeholder)) continue;
        lines[i] = `${s.header}: ${s.format.replaceAll("{}", s.value)}`;
        if (!out.injected.includes(s.name)) out.injected.push(s.name);
      }
    }
    const kept = lines.filter((l, i) => i === 0 || !/^connection\s*:/i.test(l));
    const text = [...kept, "Connection: close"].join("\r\n");
    // What is left of a placeholder here is one that may not go to this host.
    const s = this.foreign(kept.join("\r\n"), host);
    if (s) return this.#cut(out, this.refusal(s, host, port)) as undefined;
    return text;
  }

  #cut(out: InjectOutcome, reason: string): undefined {
    out.refused = reason;
    return undefined;
  }
}

function _ownHost(s: InjectedSecret, host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return s.hosts.some((x) => x.replace(/^\[|\]$/g, "").toLowerCase() === h);
}

function _longest(secrets: readonly InjectedSecret[]): number {
  return Math.max(0, ...secrets.map((s) => s.placeholder.length - 1));
}

/** A node Duplex over a Deno connection, `first` already read from it. */
function _duplex(conn: Deno.Conn, first: Uint8Array): Duplex {
  const reader = conn.readable.getReader();
  const writer = conn.writable.getWriter();
  const d = new Duplex({
    read() {
      reader.read().then(
        ({ value, done }) => this.push(done ? null : value),
        () => this.push(null),
      );
    },
    write(chunk, _enc, cb) {
      writer.write(chunk).then(() => cb(), cb);
    },
    final(cb) {
      (conn as Deno.TcpConn).closeWrite().then(() => cb(), () => cb());
    },
    destroy(_err, cb) {
      reader.cancel().catch(() => {});
      writer.close().catch(() => {});
      cb(null);
    },
  });
  d.unshift(first);
  return d;
}

/** `from` to `to` by plain reads (the first may be pending already), each chunk checked. */
async function _pump(
  from: Deno.Conn,
  to: Deno.Conn,
  allow: (chunk: Uint8Array) => boolean,
  count: (n: number) => void,
  first?: Uint8Array | Promise<Uint8Array | null>,
): Promise<void> {
  try {
    let chunk = first ? await first : undefined;
    for (;;) {
      if (chunk === null) break;
      if (chunk) {
        if (!allow(chunk)) {
          closeConn(to);
          return;
        }
        await writeAll(to, chunk);
        count(chunk.length);
      }
      const buf = new Uint8Array(32 * 1024);
      const n = await from.read(buf);
      chunk = n === null ? null : buf.subarray(0, n);
    }
  } catch { /* closed */ }
  try {
    await (to as Deno.TcpConn).closeWrite();
  } catch { /* closed */ }
}

function _latin1(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 8192) {
    s += String.fromCharCode(...b.subarray(i, i + 8192));
  }
  return s;
}

function _bytes(s: string): Uint8Array {
  const b = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i) & 0xff;
  return b;
}

function _concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
