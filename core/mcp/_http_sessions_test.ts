import assert from "node:assert/strict";
import { HttpSessions } from "./_http_sessions.ts";
import type { CorralMcpServer } from "./mcp_server.ts";

/** A session's server that counts its closes and reports its calls in flight. */
function _fakeServer(running: { n: number }, closed: string[], name: string): CorralMcpServer {
  return {
    server: undefined as never,
    callTool: undefined as never,
    principal: name,
    get running() {
      return running.n;
    },
    connect: () => Promise.resolve(),
    notifyToolsChanged: () => Promise.resolve(),
    close: () => {
      closed.push(name);
      return Promise.resolve();
    },
    revoke: () => {
      closed.push(`${name} (revoked)`);
      return Promise.resolve();
    },
  };
}

Deno.test("idle expiry never ends a session with a call in flight, and ends it once idle", async () => {
  const sessions = new HttpSessions(4, 50);
  try {
    const closed: string[] = [];
    const busy = { n: 1 };
    const idle = { n: 0 };
    // Open both through the real transport: an initialize request per session.
    const init = (id: number) =>
      new Request("http://127.0.0.1/mcp", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id,
          method: "initialize",
          params: {
            protocolVersion: "2025-06-18",
            capabilities: {},
            clientInfo: { name: "t", version: "1" },
          },
        }),
      });
    const { Server } = await import("@modelcontextprotocol/sdk/server/index.js");
    const real = (state: { n: number }, name: string): CorralMcpServer => {
      const server = new Server({ name, version: "1" }, { capabilities: {} });
      const fake = _fakeServer(state, closed, name);
      return {
        ...fake,
        server,
        connect: (t) => server.connect(t),
        get running() {
          return state.n;
        },
      };
    };
    const open = (state: { n: number }, name: string, id: number) =>
      sessions.open(real(state, name), undefined, undefined, (t) => t.handleRequest(init(id)));
    const a = await open(busy, "busy", 1);
    const b = await open(idle, "idle", 2);
    const busyId = a.headers.get("mcp-session-id")!;
    const idleId = b.headers.get("mcp-session-id")!;
    await a.body?.cancel();
    await b.body?.cancel();
    assert.ok(busyId && idleId);
    // Well past the idle time: the idle one goes, the busy one stays (many sweeps). Pings
    // (requests that are not use) do not keep the idle one alive.
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 60));
      sessions.find(idleId, undefined, false);
      sessions.expire();
    }
    assert.deepEqual(closed, ["idle"]);
    assert.ok(
      sessions.find(busyId, undefined, false),
      "the session with a call in flight was expired",
    );
    assert.equal(sessions.find(idleId, undefined, false), undefined);
    // Its call ends: from then on it is idle like any other.
    busy.n = 0;
    await new Promise((r) => setTimeout(r, 80));
    sessions.expire();
    assert.deepEqual(closed, ["idle", "busy"]);
  } finally {
    await sessions.closeAll();
  }
});
