// The attacks on identity through a real `corral mcp --http`: a JWT whose identity claim is
// "default" (the name the operator's token used to have) gets none of the operator's tools or
// workspace, and a JWKS file that another user owns stops the server from starting. These
// chown files to another user (uid 65534), so they need root (as .ci/run has).
import assert from "node:assert/strict";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { readAudit } from "../../../core/audit/mod.ts";
import { connectWithToken } from "../../../testing/mod.ts";
import { startHttpCorral, tempWorkspace, textOf } from "../../_mcp_helpers.ts";
import { OPERATOR_TOKEN } from "../../_team_helpers.ts";

async function _setup(identities: Record<string, unknown>) {
  const ws = await tempWorkspace();
  const canary = `OPERATOR-ONLY-${crypto.randomUUID()}`;
  await Deno.writeTextFile(join(ws.dir, "operator-only.txt"), canary);
  const config = join(ws.cache, "config");
  // Identities' own folders: outside corral's cache (no tool may write there).
  const people = await Deno.makeTempDir({ prefix: "corral_people_" });
  await Deno.mkdir(config, { recursive: true });
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwks = join(config, "jwks.json");
  await Deno.writeTextFile(
    jwks,
    JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" }] }),
  );
  await Deno.writeTextFile(
    join(config, "corral.json"),
    JSON.stringify({
      identities,
      auth: {
        workspaces_dir: people,
        jwks: { file: jwks, audience: "corral", issuer: "https://idp.example" },
      },
    }),
  );
  const now = Math.floor(Date.now() / 1000);
  const jwt = (sub: string) =>
    new SignJWT({ sub, aud: "corral", iss: "https://idp.example", exp: now + 600, iat: now })
      .setProtectedHeader({ alg: "ES256", kid: "k1" }).sign(privateKey);
  const audit = join(ws.cache, "audit.jsonl");
  return {
    ws: {
      ...ws,
      async [Symbol.asyncDispose]() {
        await ws[Symbol.asyncDispose]();
        await Deno.remove(people, { recursive: true });
      },
    },
    canary,
    jwks,
    jwt,
    audit,
  };
}

const INIT = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "t", version: "1" },
  },
});

Deno.test('a JWT claiming "default" is not the operator: refused without an entry, and with one it gets its own folder, not the server\'s workspace', async () => {
  // identities without "default": the claim is a stranger (403), where it used to be the operator.
  const a = await _setup({ alice: { tools: { allow: ["ReadFile"] } } });
  await using wsA = a.ws;
  {
    await using corral = await startHttpCorral(
      ["--http", "127.0.0.1:0", "--token", OPERATOR_TOKEN],
      wsA,
    );
    const r = await fetch(corral.url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await a.jwt("default")}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: INIT,
    });
    assert.equal(r.status, 403);
    assert.match((await r.json()).error.message, /"default" has no entry/);
    // The operator's own token still reads the operator's file.
    const op = await connectWithToken(corral.url, OPERATOR_TOKEN, "operator");
    const read = await op.callTool({
      name: "ReadFile",
      arguments: { filepath: "operator-only.txt" },
    });
    assert.match(textOf(read), new RegExp(a.canary));
    await op.close();
  }
  // With an entry, "default" is an ordinary member: its own folder, its own tools only.
  const b = await _setup({ default: { tools: { allow: ["ReadFile", "ListFiles"] } } });
  await using wsB = b.ws;
  await using corral = await startHttpCorral(
    ["--http", "127.0.0.1:0", "--token", OPERATOR_TOKEN, "--audit", b.audit],
    wsB,
  );
  assert.match(corral.stderr(), /identities\.default: "default" is an ordinary identity/);
  const member = await connectWithToken(corral.url, await b.jwt("default"), "claims-default");
  const tools = (await member.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(tools, ["ListFiles", "ReadFile"]);
  const read = await member.callTool({
    name: "ReadFile",
    arguments: { filepath: "operator-only.txt" },
  });
  assert.equal(read.isError, true);
  assert.doesNotMatch(textOf(read), new RegExp(b.canary));
  const listed = await member.callTool({ name: "ListFiles", arguments: { path: "." } });
  assert.doesNotMatch(textOf(listed), /operator-only|notes\.txt/);
  await member.close();
  await corral[Symbol.asyncDispose]();
  const lines = (await readAudit(b.audit, { tool: "ReadFile" })).records;
  assert.ok(lines.length > 0 && lines.every((l) => l.identity === "default"), "audited as itself");
});

Deno.test("a JWKS file owned by another user stops corral mcp --http at start, naming the file and its owner", async () => {
  assert.equal(Deno.uid(), 0, "this test chowns a file to another user: run it as root");
  const c = await _setup({ alice: {} });
  await using ws = c.ws;
  await Deno.chown(c.jwks, 65534, 65534);
  await assert.rejects(
    startHttpCorral(["--http", "127.0.0.1:0", "--token", OPERATOR_TOKEN], ws),
    (err: Error) =>
      /ended before listening/.test(err.message) && /JWKS file/.test(err.message) &&
      /belongs to uid 65534/.test(err.message),
  );
  // Writable by others: refused too.
  await Deno.chown(c.jwks, 0, 0);
  await Deno.chmod(c.jwks, 0o666);
  await assert.rejects(
    startHttpCorral(["--http", "127.0.0.1:0", "--token", OPERATOR_TOKEN], ws),
    /may be written by others \(mode 666\)/,
  );
});
