/**
 * The 2026-07-28 path over HTTP has no session: a request's principal is its
 * caller. Attacked through a real `corral mcp --http` with two identities:
 * a process left running by alice's request is seen by her next request
 * (her requests share her sandbox) and never by bob's (no sandbox is shared
 * between principals); a round's state that alice got is refused to bob;
 * bob's identity filter holds on this path as on a session; the audit
 * names each caller.
 */
import assert from "node:assert/strict";
import { rpcAnswers, teamCorral } from "../../_team_helpers.ts";

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
};

/** One 2026-07-28 request of `token`: its answer. */
async function modern(
  url: string,
  token: string,
  method: string,
  params: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const name: Record<string, string> = typeof params.name === "string"
    ? { "mcp-name": params.name }
    : {};
  const res = await fetch(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...name,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: META } }),
  });
  const [answer] = await rpcAnswers(res);
  return answer;
}

const text = (a: Record<string, unknown>) => JSON.stringify(a.result ?? a.error);

Deno.test("2026-07-28 over HTTP: an identity's requests share its sandbox, never another's; its round state is its own; filters hold", async () => {
  await using t = await teamCorral({
    alice: {},
    bob: { tools: { allow: ["RunBashCode", "DeleteFile"] } },
  }, ["-x", "-w"]);
  const marker = `corral-modern-${crypto.randomUUID().slice(0, 8)}`;
  const bash = (who: string, code: string) =>
    modern(t.url, t.tokens[who], "tools/call", { name: "RunBashCode", arguments: { code } });
  const left = await bash("alice", `(sleep 60 ${marker} &) ; echo started`);
  assert.match(text(left), /started/);
  const seen = `pgrep -f 'slee[p] 60 ${marker}' >/dev/null && echo yes-seen || echo not-seen`;
  assert.match(text(await bash("alice", seen)), /yes-seen/, "alice's next request: her sandbox");
  assert.match(text(await bash("bob", seen)), /not-seen/, "bob never runs in alice's sandbox");
  // A round of alice's (DeleteFile asks for confirmation): its state is refused to bob.
  await Deno.writeTextFile(`${t.ws.dir}/keep.txt`, "keep");
  const del = { name: "DeleteFile", arguments: { filepath: "keep.txt" } };
  const round = (await modern(t.url, t.tokens.alice, "tools/call", del)).result as {
    resultType?: string;
    requestState?: string;
    inputRequests?: Record<string, unknown>;
  };
  assert.equal(round.resultType, "input_required", JSON.stringify(round));
  const [key] = Object.keys(round.inputRequests!);
  const retry = {
    ...del,
    requestState: round.requestState,
    inputResponses: { [key]: { action: "accept", content: { approve: true } } },
  };
  // bob may call DeleteFile, but alice's state names a call of hers: refused, nothing runs.
  const stolen = await modern(t.url, t.tokens.bob, "tools/call", retry);
  assert.equal((stolen.error as { code?: number })?.code, -32602, text(stolen));
  assert.match(text(stolen), /requestState/);
  assert.equal(await Deno.readTextFile(`${t.ws.dir}/keep.txt`), "keep");
  const listed = await modern(t.url, t.tokens.bob, "tools/list", {});
  const names = (listed.result as { tools: Array<{ name: string }> }).tools.map((x) => x.name);
  assert.deepEqual(names.sort(), ["DeleteFile", "RunBashCode"], "bob's filter, on this path too");
  // alice's own retry completes her call.
  const done = await modern(t.url, t.tokens.alice, "tools/call", retry);
  assert.equal((done.result as { isError?: boolean }).isError, false, text(done));
  await assert.rejects(Deno.stat(`${t.ws.dir}/keep.txt`), Deno.errors.NotFound);
  // The audit names each caller of this path, as of a session.
  await t.stop();
  const lines = (await Deno.readTextFile(t.audit)).trim().split("\n").map((l) => JSON.parse(l));
  for (const who of ["alice", "bob"]) {
    assert.ok(
      lines.some((l) => l.identity === who && l.tool === "RunBashCode"),
      `an audit line of ${who}'s call`,
    );
  }
});
