// Real npm servers hosted by corral: @modelcontextprotocol/server-filesystem
// and server-memory, installed at exact versions into .corral/servers (by
// .ci/run, or here when missing), run under `deno run` in the namespace.
import assert from "node:assert/strict";
import { join } from "node:path";
import { approve, hostedLayout, hostedRegistry } from "../../_hosted_helpers.ts";

const FS = "@modelcontextprotocol/server-filesystem@2026.8.31";

Deno.test("server-filesystem: reads inside the grant work; outside and writes without w fail", async () => {
  await using l = await hostedLayout();
  await Deno.writeTextFile(join(l.ws, "a.txt"), "inside\n");
  // The server itself is told it may use the outside folder: only corral's sandbox stops it.
  const servers = { fs: { npm: FS, args: ["${workspace}", l.outside] } };
  const first = await hostedRegistry(l, servers, { fs: { read: ["."] } });
  const names = await approve(first.registry, "fs");
  await first.registry.close();
  assert.ok(names.includes("read_text_file") && names.includes("write_file"), names.join(","));

  const { registry } = await hostedRegistry(l, servers, { fs: { read: ["."] } });
  try {
    // `list` answers from the approved records: nothing was started.
    assert.deepEqual(registry.hosted.states(), []);
    const read = registry.get("read_text_file")!;
    assert.equal(read.toolset, "fs");
    assert.equal(read.kind, "server");
    assert.equal(read.permissions, "r");
    assert.equal(read.annotations?.readOnlyHint, true);
    // In every schema format, with the server's annotations kept for MCP.
    const openai = registry.schemas("openai") as Array<{ function: { name: string } }>;
    assert.ok(openai.some((t) => t.function.name === "read_text_file"));
    const mcp = registry.schemas("mcp") as Array<
      { name: string; annotations: { readOnlyHint?: boolean } }
    >;
    assert.equal(mcp.find((t) => t.name === "read_text_file")!.annotations.readOnlyHint, true);
    assert.equal(mcp.find((t) => t.name === "write_file")!.annotations.readOnlyHint, false);
    // A destructive tool needs confirmation, like DeleteFile.
    assert.equal(registry.get("write_file")!.confirm, true);

    const ok = await registry.call("read_text_file", { path: join(l.ws, "a.txt") });
    assert.equal(ok.success, true, JSON.stringify(ok));
    assert.match(JSON.stringify(ok.result), /inside/);

    for (const path of [join(l.outside, "canary.txt"), "/etc/shadow", "/root/.bashrc"]) {
      const r = await registry.call("read_text_file", { path });
      assert.equal(r.success, false, `${path}: ${JSON.stringify(r)}`);
      assert.doesNotMatch(JSON.stringify(r), /CANARY-SECRET/);
    }

    const refused = await registry.call("write_file", { path: join(l.ws, "b.txt"), content: "x" });
    assert.equal(refused.success, false);
    assert.match(String(refused.error), /confirmation/);
    const w = await registry.call(
      "write_file",
      { path: join(l.ws, "b.txt"), content: "x" },
      { confirm: () => true },
    );
    assert.equal(w.success, false, JSON.stringify(w));
    await assert.rejects(Deno.stat(join(l.ws, "b.txt")), Deno.errors.NotFound);
    // The host still answers.
    assert.equal(
      (await registry.call("read_text_file", { path: join(l.ws, "a.txt") })).success,
      true,
    );
  } finally {
    await registry.close();
  }
  // Each call is audited with the server, the tool, the outcome and the duration.
  const lines = (await Deno.readTextFile(l.audit)).split("\n").filter(Boolean).map((x) =>
    JSON.parse(x)
  ).filter((r) => r.tool === "read_text_file");
  assert.ok(lines.length >= 4);
  assert.ok(lines.every((r) => r.toolset === "fs" && r.source === "server"));
  // A read the server refused is its own answer (failure), not corral's error.
  assert.ok(
    lines.some((r) => r.outcome === "success") && lines.some((r) => r.outcome === "failure"),
  );
  assert.ok(lines.every((r) => typeof r.duration_ms === "number"));
});

Deno.test("server-filesystem: with w, writes land inside the grant only", async () => {
  await using l = await hostedLayout();
  const servers = { fs: { npm: FS, args: ["${workspace}"], confirm: { write_file: false } } };
  const perms = { fs: { read: ["."], write: ["."] } };
  const first = await hostedRegistry(l, servers, perms);
  await approve(first.registry, "fs");
  await first.registry.close();
  const { registry } = await hostedRegistry(l, servers, perms);
  try {
    // The operator's per-tool override: no confirmation for write_file.
    assert.equal(registry.get("write_file")!.confirm, false);
    const w = await registry.call("write_file", { path: join(l.ws, "b.txt"), content: "hello" });
    assert.equal(w.success, true, JSON.stringify(w));
    assert.equal(await Deno.readTextFile(join(l.ws, "b.txt")), "hello");
    const out = await registry.call("write_file", {
      path: join(l.outside, "canary.txt"),
      content: "pwned",
    });
    assert.equal(out.success, false);
    assert.equal(await Deno.readTextFile(join(l.outside, "canary.txt")), "CANARY-SECRET\n");
  } finally {
    await registry.close();
  }
});

Deno.test("server-memory: a knowledge graph kept in the workspace", async () => {
  await using l = await hostedLayout();
  const servers = {
    memory: {
      npm: "@modelcontextprotocol/server-memory@2026.8.31",
      env: { MEMORY_FILE_PATH: "${workspace}/memory.jsonl" },
      confirm: { create_entities: false },
    },
  };
  const perms = { memory: { read: ["."], write: ["."] } };
  const first = await hostedRegistry(l, servers, perms);
  const names = await approve(first.registry, "memory");
  await first.registry.close();
  assert.ok(names.includes("create_entities") && names.includes("read_graph"));
  const { registry } = await hostedRegistry(l, servers, perms);
  try {
    const c = await registry.call("create_entities", {
      entities: [{ name: "corral", entityType: "project", observations: ["hosts servers"] }],
    });
    assert.equal(c.success, true, JSON.stringify(c));
    const g = await registry.call("read_graph", {});
    assert.equal(g.success, true, JSON.stringify(g));
    assert.match(JSON.stringify(g.result), /hosts servers/);
    assert.match(await Deno.readTextFile(join(l.ws, "memory.jsonl")), /corral/);
  } finally {
    await registry.close();
  }
});
