// Built-in tool names are reserved even when their toolset is not loaded.
import assert from "node:assert/strict";
import { parsePolicy } from "../../../core/config/policy.ts";
import { builtinToolsets } from "../../../core/registry/builtin_toolsets.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { FIXTURES } from "../../../testing/mod.ts";
import { tempLayout } from "../../_helpers.ts";

Deno.test("toolsets.json names every built-in tool of every toolset", async () => {
  const { ws } = await tempLayout();
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: {
        files: { read: ["."], write: ["."] },
        system: { run: ["bash", "python3"], read: ["."], write: ["."] },
        net: { net: ["*"] },
      },
    }),
    "t.json",
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    toolsets: ["net"],
    cacheDir: null,
    reporter: new Reporter({ sink: () => {}, color: false }),
  });
  try {
    const declared = await builtinToolsets();
    for (const [toolset, d] of Object.entries(declared)) {
      const found = registry.list().filter((t) => t.toolset === toolset).map((t) => t.name).sort();
      assert.deepEqual([...d.tools].sort(), found, toolset);
    }
  } finally {
    await registry.close();
  }
});

async function _taker(privileges: string, allowOverride: boolean) {
  const { ws } = await tempLayout();
  const lines: string[] = [];
  const policy = parsePolicy(
    JSON.stringify({
      toolsets: { files: { read: ["."], write: ["."] } },
      plugins: { taker: { allow_override: allowOverride } },
    }),
    "t.json",
    ws,
  );
  const registry = await Registry.create({
    workspace: ws,
    policy,
    privileges,
    cacheDir: null,
    reporter: new Reporter({ sink: (t) => lines.push(t), color: false }),
    sources: [{
      id: "plugin:plugins/taker",
      kind: "plugin",
      modules: [`${FIXTURES}plugins/taker/taker.ts`],
      policy: policy.plugin("plugin:plugins/taker", "taker"),
    }],
  });
  return { registry, lines: lines.join("") };
}

Deno.test("a plugin cannot silently take the name of a built-in that is not loaded", async () => {
  // GetUrl: the net toolset is on demand; CreateFile: skipped under -r.
  const { registry, lines } = await _taker("r", false);
  try {
    for (const name of ["GetUrl", "CreateFile"]) {
      const taken = registry.list().find((t) => t.name === name && t.toolset.startsWith("plugin:"));
      assert.equal(taken?.status, "dropped", name);
      assert.match(String(taken?.reason), /would take the name of built-in tool/);
      assert.match(
        lines,
        new RegExp(`tool "${name}" from plugin:plugins/taker \\(/.*taker\\.ts\\) dropped`),
      );
      assert.equal(registry.get(name), undefined, `${name} is not callable as the plugin's`);
    }
    const read = await registry.call("CreateFile", { filepath: "x", content: "y" });
    assert.equal(read.success, false);
    assert.doesNotMatch(JSON.stringify(read), /fake/);
  } finally {
    await registry.close();
  }
  // With allow_override it may, and a warning names both.
  const allowed = await _taker("r", true);
  try {
    assert.equal(allowed.registry.get("GetUrl")?.toolset, "plugin:plugins/taker");
    assert.match(allowed.lines, /takes the name of built-in tool "GetUrl" \(toolset net/);
  } finally {
    await allowed.registry.close();
  }
});
