/**
 * node:http's own parser (llhttp, in Deno's Node layer) as an oracle: the
 * requests it reads in a byte stream sent on one connection, and whether it
 * refused the stream. For core/wire/http_request_fuzz_test.ts.
 *
 * @module
 */
import { createServer, type IncomingMessage } from "node:http";
import { connect, type Socket } from "node:net";

/** One request read whole: its fields flattened name, value, name, …; its body as Latin-1. */
export interface ReadRequest {
  method: string;
  url: string;
  fields: string[];
  body: string;
}

/** What a parser read in a stream. */
export interface LlhttpReading {
  requests: ReadRequest[];
  /** It refused the stream (a parse error), after `requests`. */
  refused: boolean;
}

interface _Case {
  /** In the order their heads came; `whole` once the body has ended. */
  seen: Array<ReadRequest & { whole: boolean }>;
  refused: boolean;
  done: () => void;
}

/** A server that reports what llhttp reads; `read` sends one stream on a new connection. */
export async function llhttpOracle(maxHeaderSize: number): Promise<
  { read(bytes: Uint8Array): Promise<LlhttpReading> } & AsyncDisposable
> {
  const waiting: _Case[] = [];
  const cases = new WeakMap<object, _Case>();
  const server = createServer({
    maxHeaderSize,
    requireHostHeader: false, // a check of node:http's, not of its parser
    requestTimeout: 0,
    headersTimeout: 60_000,
  }, (req: IncomingMessage, res) => {
    const c = cases.get(req.socket)!;
    const r = {
      method: req.method!,
      url: req.url!,
      fields: req.rawHeaders,
      body: "",
      whole: false,
    };
    c.seen.push(r);
    req.setEncoding("latin1");
    req.on("data", (d: string) => r.body += d);
    req.on("end", () => {
      r.whole = true;
      res.end();
    });
    req.on("error", () => {});
  });
  // The client's end of the stream does not abort a request the parser has read whole but
  // not yet delivered: what it read is taken once the events of that end have run.
  (server as unknown as { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on("connection", (socket: Socket) => {
    const c = waiting.shift()!;
    cases.set(socket, c);
    const finish = () => {
      socket.destroy();
      c.done();
    };
    socket.on("end", () => setTimeout(finish, 0));
    socket.on("close", () => setTimeout(finish, 0));
  });
  server.on("connect", (req: IncomingMessage, socket: Socket, head: Uint8Array) => {
    const c = cases.get(req.socket)!;
    // The tunnel: what came with the head, then the rest of the stream.
    const r = { method: req.method!, url: req.url!, fields: req.rawHeaders, body: "", whole: true };
    r.body = Array.from(head, (b) => String.fromCharCode(b)).join("");
    c.seen.push(r);
    socket.on(
      "data",
      (d: Uint8Array) => r.body += Array.from(d, (b) => String.fromCharCode(b)).join(""),
    );
  });
  server.on("clientError", (err: Error & { code?: string }, socket: Socket) => {
    const c = cases.get(socket);
    if (c && String(err.code).startsWith("HPE_")) c.refused = true;
    socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return {
    read: (bytes) =>
      new Promise((resolve) => {
        const c: _Case = {
          seen: [],
          refused: false,
          done: () =>
            resolve({
              requests: c.seen.filter((r) => r.whole).map(({ whole: _, ...r }) => r),
              refused: c.refused,
            }),
        };
        waiting.push(c);
        const client = connect(port, "127.0.0.1");
        client.on("connect", () => client.end(bytes));
        client.on("data", () => {});
        client.on("error", () => {});
      }),
    [Symbol.asyncDispose]: () => new Promise<void>((r) => server.close(() => r())),
  };
}
