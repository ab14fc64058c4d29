// Discovery of alike plugins in one process sandbox (core/registry/discovery_batch.ts):
// each plugin in a worker of its own, holding only its own files; a plugin
// that hangs or crashes its batch decides nothing for the others.
import assert from "node:assert/strict";
import { parsePolicy } from "../core/config/policy.ts";
import { Registry } from "../core/registry/registry.ts";
import { Reporter } from "../core/tool/reporter.ts";
import { tempLayout } from "./_helpers.ts";

function _plugin(name: string, topLevel = "", description = `"${name}"`): string {
  return `import { z } from "zod";\n${topLevel}\nexport const TOOL_CONFIGS = [{\n` +
    `  name: "${name}",\n  description: ${description},\n` +
    `  input_schema: z.object({}),\n  function: () => ({ success: true }),\n}];\n`;
}

async function _registry(base: string, dir: string, files: Record<string, string>) {
  await Deno.mkdir(dir, { recursive: true });
  for (const [f, text] of Object.entries(files)) await Deno.writeTextFile(`${dir}/${f}`, text);
  const policy = parsePolicy(
    JSON.stringify({
      plugins: { default: { isolation: "process", read: ["ws"], discovery_timeout_ms: 4000 } },
    }),
    "test-permissions.json",
    base,
  );
  const lines: string[] = [];
  const registry = await Registry.create({
    workspace: `${base}/ws`,
    policy,
    noBuiltins: true,
    cacheDir: null,
    reporter: new Reporter({ sink: (t) => lines.push(t), color: false }),
    sources: Object.keys(files).sort().map((f) => ({
      id: `plugin:${f.replace(/\.ts$/, "")}`,
      kind: "plugin" as const,
      modules: [`${dir}/${f}`],
      policy: policy.plugin(f.replace(/\.ts$/, "")),
    })),
  });
  return { registry, lines };
}

Deno.test("alike plugins are discovered in one process, each in its own realm reading only its own files", async () => {
  const { base } = await tempLayout();
  const dir = `${base}/plugins`;
  const snoop = `
let saw = "nothing";
try { Deno.readTextFileSync(new URL("./a_marker.ts", import.meta.url)); saw = "read it"; }
catch (e) { saw = (e as Error).name; }
const realm = (globalThis as Record<string, unknown>).__corralMarker ?? "clean";`;
  const { registry } = await _registry(base, dir, {
    "a_marker.ts": _plugin(
      "Marker",
      `(globalThis as Record<string, unknown>).__corralMarker = "a";`,
    ),
    "b_snoop.ts": _plugin("Snoop", snoop, "`saw=${saw} realm=${realm}`"),
    "c_plain.ts": _plugin("PlainOne"),
    "d_plain.ts": _plugin("PlainTwo"),
  });
  try {
    const tools = registry.list();
    for (const name of ["Marker", "Snoop", "PlainOne", "PlainTwo"]) {
      assert.equal(tools.find((t) => t.name === name)?.status, "loaded", name);
    }
    // One process for the four (they hold the same grant), and still no shared realm or files.
    assert.equal(registry.discoverySandboxes, 1);
    const snooped = tools.find((t) => t.name === "Snoop")!.description;
    assert.equal(snooped, "saw=NotCapable realm=clean");
  } finally {
    await registry.close();
  }
});

Deno.test("a plugin that hangs or kills its batch at import is refused alone; the others load", async () => {
  const { base } = await tempLayout();
  const dir = `${base}/plugins`;
  const { registry } = await _registry(base, dir, {
    "a_fine.ts": _plugin("FineA"),
    "b_hang.ts": _plugin("Hangs", "while (true) { /* top-level code that never ends */ }"),
    "c_fine.ts": _plugin("FineC"),
    "d_exit.ts": _plugin("Exits", "Deno.exit(3);"),
    "e_fine.ts": _plugin("FineE"),
  });
  try {
    const tools = registry.list();
    for (const name of ["FineA", "FineC", "FineE"]) {
      assert.equal(tools.find((t) => t.name === name)?.status, "loaded", name);
    }
    const hang = registry.problems.find((p) => p.source.endsWith("b_hang.ts"));
    assert.ok(hang, JSON.stringify(registry.problems));
    assert.match(hang.message, /timed out/);
    const exit = registry.problems.find((p) => p.source.endsWith("d_exit.ts"));
    assert.ok(exit, JSON.stringify(registry.problems));
    assert.match(exit.message, /Deno\.exit\(3\) is not allowed/);
    // The batch, then each plugin whose batch went wrong alone.
    assert.ok(registry.discoverySandboxes >= 2, String(registry.discoverySandboxes));
  } finally {
    await registry.close();
  }
});
