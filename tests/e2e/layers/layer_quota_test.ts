// Bounded work per call (issue 37, class 9): a sandbox's write layer has a quota on its entries
// and bytes (layer_max_entries, layer_max_bytes in permissions.json). A call that goes past it
// fails with an error naming the quota and where it is set, and nothing of its changes reaches
// the tree; the next call starts afresh and is applied (the control). With layer_partial, what
// fits is applied and the rest is refused by name.
import assert from "node:assert/strict";
import { join } from "node:path";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { tempLayout } from "../../_helpers.ts";

async function _registry(limits: Record<string, unknown>) {
  const { ws, outside } = await tempLayout();
  await Deno.writeTextFile(join(ws, "notes.txt"), "the user's\n");
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: { system: { run: ["bash"], read: ["."], write: ["."], ...limits } },
    }),
    join(outside, "permissions.json"),
    ws,
  );
  const audit = join(outside, "audit.jsonl");
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges: "rwx",
    cacheDir: null,
    auditPath: audit,
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
  const lines = async () =>
    (await Deno.readTextFile(audit)).trim().split("\n").map((l) => JSON.parse(l));
  return { ws, registry, lines };
}

const MANY = "mkdir many && for i in $(seq 1 80); do : > many/f$i; done && " +
  "echo tool >> notes.txt";

function _names(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name);
  } catch {
    return [];
  }
}

Deno.test("past layer_max_entries: the call fails naming it, nothing is applied; the next call is", async () => {
  const { ws, registry, lines } = await _registry({ layer_max_entries: 50 });
  try {
    const over = await registry.call("RunBashCode", { code: MANY });
    assert.equal(over.success, false);
    assert.match(
      String(over.error),
      /write layer holds 8\d entries, over its quota of 50 entries \(toolsets\.system\.layer_max_entries in permissions\.json\): none of its changes were applied/,
    );
    assert.deepEqual(_names(join(ws, "many")), []);
    assert.equal(await Deno.readTextFile(join(ws, "notes.txt")), "the user's\n");
    // Control: the sandbox starts afresh and a call within the quota is applied.
    const ok = await registry.call("RunBashCode", { code: "mkdir few && : > few/a && : > few/b" });
    assert.equal(ok.success, true, JSON.stringify(ok));
    assert.deepEqual(_names(join(ws, "few")).sort(), ["a", "b"]);
  } finally {
    await registry.close();
  }
  const calls = (await lines()).filter((l) => l.tool === "RunBashCode");
  assert.match(calls[0].changes.over, /layer_max_entries/);
  assert.equal(calls[0].changes.created, 0);
});

Deno.test("past layer_max_bytes: the call fails naming it, nothing is applied", async () => {
  const { ws, registry } = await _registry({ layer_max_bytes: 10_000 });
  try {
    const over = await registry.call("RunBashCode", {
      code: "head -c 20000 /dev/zero > big.bin && echo small > small.txt",
    });
    assert.equal(over.success, false);
    assert.match(
      String(over.error),
      /over its quota of 10,000 bytes \(toolsets\.system\.layer_max_bytes/,
    );
    assert.deepEqual(_names(ws).sort(), ["notes.txt"]);
  } finally {
    await registry.close();
  }
});

Deno.test("layer_partial: past the quota what fits is applied, the rest refused by name", async () => {
  const { ws, registry } = await _registry({ layer_max_entries: 50, layer_partial: true });
  try {
    const over = await registry.call("RunBashCode", { code: MANY });
    assert.equal(over.success, false);
    assert.match(String(over.error), /only what fits was applied/);
    assert.match(String(over.error), /past the layer's quota/);
    const applied = _names(join(ws, "many")).length;
    assert.ok(applied > 0 && applied < 50, `${applied} files applied`);
  } finally {
    await registry.close();
  }
});

Deno.test("a bad layer limit is refused at load, naming the file and the key", () => {
  assert.throws(
    () =>
      parsePolicy('{"toolsets":{"system":{"layer_max_entries":0}}}', "/x/permissions.json", "/w"),
    /\/x\/permissions\.json: toolsets\.system\.layer_max_entries: Number must be greater than or equal to 1/,
  );
  assert.throws(
    () => parsePolicy('{"defaults":{"layer_partial":"yes"}}', "/x/permissions.json", "/w"),
    /defaults\.layer_partial: Expected boolean/,
  );
  // Set in defaults, kept per entry.
  const p = parsePolicy(
    '{"defaults":{"layer_max_bytes":1000},"toolsets":{"system":{"layer_partial":true}}}',
    "/x/permissions.json",
    "/w",
  );
  const s = p.toolset("system");
  assert.deepEqual([s.layer_max_bytes, s.layer_partial, s.layer_max_entries], [
    1000,
    true,
    undefined,
  ]);
});
