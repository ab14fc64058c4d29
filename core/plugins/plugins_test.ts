// Unit tests of core/plugins/: source building, packages, plugin files. Nothing
// here imports a plugin (the end-to-end loading is in tests/e2e/plugins/plugins_test.ts).
import assert from "node:assert/strict";
import { parseConfig } from "../config/corral_config.ts";
import { importHosts, installPlugin, packageName, packageSource } from "./packages.ts";
import { isPluginFileName } from "./plugin_files.ts";
import { EXAMPLES_DIR, pluginSources, splitToolDirs, uniqueLabels } from "./plugins.ts";
import { parsePolicy } from "../config/policy.ts";

const HOME = Deno.env.get("HOME") ?? "/";

async function tempDir(): Promise<string> {
  return await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_plugins_unit_" }));
}

Deno.test("CORRAL_TOOL_DIRS is split on colons like PATH, skipping empty parts", () => {
  assert.deepEqual(splitToolDirs("a::/b:~/c", "/w"), ["/w/a", "/b", `${HOME}/c`]);
  assert.deepEqual(splitToolDirs("", "/w"), []);
  assert.deepEqual(splitToolDirs(undefined, "/w"), []);
});

Deno.test("plugin file names: .ts/.js/.mjs only, no `_` helpers, no `_test` files", () => {
  for (const ok of ["a.ts", "b.js", "c.mjs", "test_helper.ts"]) assert.ok(isPluginFileName(ok), ok);
  for (const no of ["_a.ts", "a_test.ts", "a_test.js", "a.d.ts", "a.json", "a.tsx", "README.md"]) {
    assert.ok(!isPluginFileName(no), no);
  }
});

Deno.test("uniqueLabels: directories with the same name get distinct short labels", () => {
  assert.deepEqual(uniqueLabels(["/x/a/tools", "/y/b/tools", "/z/plugins"]), [
    "a/tools",
    "b/tools",
    "plugins",
  ]);
  assert.deepEqual(uniqueLabels(["/a/tools", "/a/tools"]), ["a/tools", "a/tools~2"]);
});

Deno.test("packageName: npm/jsr package names, file stems, directory of mod.ts", () => {
  assert.equal(packageName("npm:@acme/weather@1.2.0/tools"), "@acme/weather");
  assert.equal(packageName("npm:left-pad@1"), "left-pad");
  assert.equal(packageName("jsr:@acme/dice@^1"), "@acme/dice");
  assert.equal(packageName("https://example.com/x/stocks.ts"), "stocks");
  assert.equal(packageName("./vendor/stocks/mod.ts"), "stocks");
  assert.equal(packageName("../weather.js"), "weather");
});

Deno.test("pluginSources: ids plugin:<dir>/<stem>, own policy entry and own services section, default dir first", async () => {
  const dir = await tempDir();
  try {
    await Deno.mkdir(`${dir}/one/tools`, { recursive: true });
    await Deno.mkdir(`${dir}/two/tools`, { recursive: true });
    const file =
      'export const TOOL_CONFIGS = [{ name: "X", description: "x", function: () => 1 }];\n';
    await Deno.writeTextFile(`${dir}/one/tools/same.ts`, file);
    await Deno.writeTextFile(`${dir}/two/tools/same.ts`, file);
    await Deno.writeTextFile(`${dir}/two/tools/weather.ts`, file);
    const policy = parsePolicy(
      JSON.stringify({ plugins: { weather: { net: ["api.example.com"], isolation: "worker" } } }),
      "p.json",
      dir,
    );
    const config = parseConfig(
      JSON.stringify({
        tool_dirs: ["one/tools", "missing"],
        services: { weather: { key: "k" }, same: { n: 1 } },
      }),
      `${dir}/corral.json`,
    );
    await Deno.mkdir(`${dir}/user/plugins`, { recursive: true });
    await Deno.writeTextFile(`${dir}/user/plugins/mine.ts`, file);
    const found = await pluginSources({
      policy,
      config,
      envDirs: `${dir}/two/tools`,
      workspace: dir,
      defaultDir: `${dir}/user/plugins`,
    });
    const ids = found.sources.map((s) => s.id);
    assert.deepEqual(ids, [
      "plugin:plugins/mine",
      "plugin:one/tools/same",
      "plugin:two/tools/same",
      "plugin:two/tools/weather",
    ], "the user's plugins directory first; corral's examples not at all");
    assert.equal(found.dirs[0].dir, `${dir}/user/plugins`);
    const demo = await pluginSources({
      policy,
      config,
      envDirs: null,
      workspace: dir,
      defaultDir: null,
      examples: true,
    });
    assert.equal(demo.dirs[0].dir, EXAMPLES_DIR, "corral demo loads the examples");
    const weather = found.sources.find((s) => s.id.endsWith("/weather"))!;
    assert.deepEqual(weather.config, { key: "k" });
    assert.deepEqual(weather.policy.net, ["api.example.com"]);
    assert.equal(weather.policy.where, "plugins.weather");
    const same = found.sources.find((s) => s.id === "plugin:one/tools/same")!;
    assert.deepEqual(same.config, { n: 1 });
    assert.equal(same.policy.where, "plugins.default");
    assert.equal(same.policy.isolation, "process");
    assert.deepEqual(same.policy.read, []);
    assert.ok(found.warnings.some((w) => w.includes(`${dir}/missing`) && w.includes("not found")));

    const off = await pluginSources({
      policy,
      config: { ...config, defaultPluginDir: false },
      envDirs: null,
      workspace: dir,
    });
    assert.deepEqual(off.sources.map((s) => s.id), ["plugin:tools/same"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("packageSource: a local path resolves against the config folder; a missing one is a warning", async () => {
  const dir = await tempDir();
  try {
    await Deno.mkdir(`${dir}/vendor/stocks`, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/vendor/stocks/mod.ts`,
      "export default { tools: () => [] };\n",
    );
    const policy = parsePolicy("{}", "p.json", dir);
    const config = { baseDir: dir, services: { stocks: { k: 1 } } };
    const src = await packageSource("./vendor/stocks/mod.ts", config, policy);
    assert.ok(typeof src !== "string");
    assert.deepEqual(src.modules, [`${dir}/vendor/stocks/mod.ts`]);
    assert.equal(src.kind, "package");
    assert.deepEqual(src.config, { k: 1 });
    const remote = await packageSource("npm:@acme/stocks@1", config, policy);
    assert.ok(typeof remote !== "string");
    assert.deepEqual(remote.modules, ["npm:@acme/stocks@1"]);
    const missing = await packageSource("./nope.ts", config, policy);
    assert.equal(typeof missing, "string");
    assert.match(missing as string, /nope\.ts.*not found/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("installPlugin caches a local package and adds it to corral.json once", async () => {
  const dir = await tempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/pkg.ts`,
      'import { z } from "zod";\nexport const TOOL_CONFIGS = [{ name: "P", description: "p", input_schema: z.object({}), function: () => 1 }];\n',
    );
    await Deno.writeTextFile(`${dir}/corral.json`, '{"services": {"pkg": {}}}');
    const first = await installPlugin("./pkg.ts", { configFile: `${dir}/corral.json` });
    assert.equal(first.added, true);
    const again = await installPlugin("./pkg.ts", { configFile: `${dir}/corral.json` });
    assert.equal(again.added, false);
    const saved = JSON.parse(await Deno.readTextFile(`${dir}/corral.json`));
    assert.deepEqual(saved, { services: { pkg: {} }, plugins: ["./pkg.ts"] });
    await assert.rejects(
      installPlugin("./missing.ts", { configFile: `${dir}/corral.json` }),
      /Cannot install \.\/missing\.ts: .*missing\.ts: /,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("importHosts gives remote packages import access to their own host only", () => {
  assert.deepEqual(importHosts("https://example.com:8443/plugins/mod.ts"), ["example.com:8443"]);
  assert.deepEqual(importHosts("http://127.0.0.1:9000/mod.ts"), ["127.0.0.1:9000"]);
  assert.deepEqual(importHosts("jsr:@scope/tools@1"), ["jsr.io"]);
  assert.deepEqual(importHosts("npm:some-tools@1"), []);
  assert.deepEqual(importHosts("./local/plugin.ts"), []);
});
