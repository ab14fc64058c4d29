// Discovery's work is proportional to the plugins (issue 41): counted, never timed. N and 2N
// plugins of two tools each, importing one shared local helper, are discovered cold; then
// one file changes. The counts are Registry.discoveryStats: modules imported in a sandbox,
// files read and hashed, discovery sandboxes started, runs of `deno info`.
import assert from "node:assert/strict";
import { parsePolicy } from "../../../core/config/policy.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { Reporter } from "../../../core/tool/reporter.ts";
import { tempLayout } from "../../_helpers.ts";

const HELPER = `export function echo(text: string) {\n  return { success: true, text };\n}\n`;

function _plugin(id: string): string {
  const tool = (name: string) =>
    `  {\n    name: "${name}",\n    description: "${name} of plugin ${id}",\n` +
    `    input_schema: z.object({ text: z.string() }),\n` +
    `    function: ({ text }: { text: string }) => echo(text),\n  },\n`;
  return `import { z } from "zod";\nimport { echo } from "./_helper.ts";\n` +
    `export const TOOL_CONFIGS = [\n${tool(`Alpha${id}`)}${tool(`Beta${id}`)}];\n`;
}

/** Files older than the racy window, so that size and mtime are trusted next time. */
async function _age(file: string, secondsAgo = 60): Promise<void> {
  const t = new Date(Date.now() - secondsAgo * 1000);
  await Deno.utime(file, t, t);
}

async function _plugins(dir: string, n: number): Promise<string[]> {
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(`${dir}/_helper.ts`, HELPER);
  await _age(`${dir}/_helper.ts`);
  const files: string[] = [];
  for (let i = 1; i <= n; i++) {
    const file = `${dir}/p_${String(i).padStart(3, "0")}.ts`;
    await Deno.writeTextFile(file, _plugin(String(i)));
    await _age(file);
    files.push(file);
  }
  return files;
}

async function _discover(
  base: string,
  files: string[],
  cacheDir: string,
  { builtins = false, batch }: { builtins?: boolean; batch?: number } = {},
) {
  const policy = parsePolicy(
    JSON.stringify({
      plugins: { default: { isolation: "process", ...(batch ? { discovery_batch: batch } : {}) } },
    }),
    "test-permissions.json",
    base,
  );
  const registry = await Registry.create({
    workspace: `${base}/ws`,
    policy,
    noBuiltins: !builtins,
    cacheDir,
    reporter: new Reporter({ quiet: true }),
    sources: files.map((f) => {
      const name = f.split("/").pop()!.replace(/\.ts$/, "");
      return {
        id: `plugin:${name}`,
        kind: "plugin" as const,
        modules: [f],
        policy: policy.plugin(name),
      };
    }),
  });
  try {
    const loaded = registry.loaded().length;
    const listed = registry.list().map((t) => `${t.toolset}/${t.name}: ${t.status}`);
    return { ...registry.discoveryStats, loaded, listed, problems: registry.problems };
  } finally {
    await registry.close();
  }
}

Deno.test("discovery's work for 2N plugins is at most twice its work for N: imports, hashes, sandboxes", async () => {
  const { base } = await tempLayout();
  const n = 8;
  const small = await _plugins(`${base}/small`, n);
  const large = await _plugins(`${base}/large`, 2 * n);
  const one = await _discover(base, small, `${base}/cache_small`);
  const two = await _discover(base, large, `${base}/cache_large`);
  // Control: every plugin loaded, both tools of each; nothing came from a cache.
  assert.deepEqual(one.problems, []);
  assert.deepEqual(two.problems, []);
  assert.equal(one.loaded, 2 * n);
  assert.equal(two.loaded, 4 * n);
  assert.equal(one.imports, n);
  assert.equal(two.imports, 2 * n);
  // Each file read and hashed once: every plugin, and the helper they share once.
  assert.equal(one.hashed, n + 1);
  assert.equal(two.hashed, 2 * n + 1);
  // Plugins share processes, planned from their count: fewer sandboxes than plugins, and
  // twice the plugins start at most twice the sandboxes.
  assert.ok(one.sandboxes >= 1 && one.sandboxes < n, `N: ${one.sandboxes} sandboxes`);
  assert.ok(two.sandboxes <= 2 * one.sandboxes, `2N: ${two.sandboxes} against ${one.sandboxes}`);
  // One `deno info` finds the npm packages of all of a discovery's sandboxes (none without
  // the namespace, where no lean cache is made).
  assert.ok(one.infoRuns <= 1 && two.infoRuns <= 1, `${one.infoRuns}, ${two.infoRuns}`);
});

Deno.test("the discovery cache is invalidated per file: one changed file is the only one read again", async () => {
  const { base } = await tempLayout();
  const dir = `${base}/plugins`;
  const files = await _plugins(dir, 6);
  const cache = `${base}/cache`;
  const cold = await _discover(base, files, cache);
  assert.equal(cold.imports, 6);
  // Warm: nothing read, hashed, imported or started.
  const warm = await _discover(base, files, cache);
  assert.deepEqual([warm.imports, warm.hashed, warm.sandboxes], [0, 0, 0]);
  assert.equal(warm.loaded, 12);

  // One plugin changes: that file alone is read and hashed, that module alone imported.
  await Deno.writeTextFile(files[2], _plugin("3").replace("Alpha3", "Gamma3"));
  await _age(files[2], 30);
  const edited = await _discover(base, files, cache);
  assert.deepEqual([edited.imports, edited.hashed, edited.sandboxes], [1, 1, 1]);
  assert.equal(edited.loaded, 12);

  // The shared helper changes: every plugin importing it is imported again, yet the helper is
  // the only file read and hashed (the others' hashes and imports are remembered per file).
  await Deno.writeTextFile(`${dir}/_helper.ts`, HELPER.replace("success: true", "success: !!1"));
  await _age(`${dir}/_helper.ts`, 20);
  const helper = await _discover(base, files, cache);
  assert.equal(helper.imports, 6);
  assert.equal(helper.hashed, 1);
  assert.equal(helper.loaded, 12);
});

Deno.test("an unchanged plugin checked from remembered imports is still refused when a folder it imports becomes a symlink out", async () => {
  const { base, outside } = await tempLayout();
  const dir = `${base}/plugins`;
  await Deno.mkdir(`${dir}/lib`, { recursive: true });
  await Deno.writeTextFile(`${dir}/lib/util.ts`, HELPER);
  // The same size and mtime outside: a check by size and mtime alone would take it for the file.
  await Deno.writeTextFile(`${outside}/util.ts`, HELPER);
  const plugin = `${dir}/p_lib.ts`;
  await Deno.writeTextFile(plugin, _plugin("L").replace("./_helper.ts", "./lib/util.ts"));
  const then = new Date("2026-01-01T00:00:00Z");
  for (const f of [plugin, `${dir}/lib/util.ts`, `${outside}/util.ts`]) {
    await Deno.utime(f, then, then);
  }
  const cache = `${base}/cache`;
  const first = await _discover(base, [plugin], cache);
  assert.equal(first.loaded, 2, JSON.stringify(first.problems));
  const { DiscoveryCache } = await import("../../../core/registry/discovery_cache.ts");
  const { graphEscape } = await import("../../../core/plugins/plugin_files.ts");
  const known = new DiscoveryCache(cache, new Reporter({ quiet: true }));
  // Control: the plugin's graph is known without reading it, and stays inside its folder.
  assert.deepEqual(known.knownImports(plugin), [`${dir}/lib/util.ts`]);
  assert.equal(await graphEscape(plugin, dir, undefined, (f) => known.knownImports(f)), undefined);
  // The folder it imports from is swapped for a symlink out; the plugin file is unchanged.
  await Deno.remove(`${dir}/lib`, { recursive: true });
  await Deno.symlink(outside, `${dir}/lib`);
  const swapped = new DiscoveryCache(cache, new Reporter({ quiet: true }));
  assert.deepEqual(swapped.knownImports(`${dir}/lib/util.ts`), [], "served from memory");
  const escape = await graphEscape(plugin, dir, undefined, (f) => swapped.knownImports(f));
  assert.match(escape ?? "", /outside the plugin directory/);
});

Deno.test("the policy's discovery_batch bounds the plugins a discovery process imports", async () => {
  const { base } = await tempLayout();
  const files = await _plugins(`${base}/plugins`, 5);
  // Control: by default the five share one process.
  const shared = await _discover(base, files, `${base}/cache_default`);
  assert.deepEqual([shared.loaded, shared.imports, shared.sandboxes], [10, 5, 1]);
  // At most two a process: three processes (2, 2, 1), every plugin still loaded.
  const two = await _discover(base, files, `${base}/cache_two`, { batch: 2 });
  assert.deepEqual(two.problems, []);
  assert.deepEqual([two.loaded, two.imports, two.sandboxes], [10, 5, 3]);
  // One a process: a sandbox each.
  const one = await _discover(base, files, `${base}/cache_one`, { batch: 1 });
  assert.deepEqual([one.loaded, one.imports, one.sandboxes], [10, 5, 5]);
});

Deno.test("corral's own toolsets are discovered in one sandbox, and listed from the cache without any", async () => {
  const { base } = await tempLayout();
  const cache = `${base}/cache`;
  const cold = await _discover(base, [], cache, { builtins: true });
  assert.deepEqual(cold.problems, []);
  // Control: built-in modules were imported, their tools listed (skipped: this policy grants
  // them nothing, which is decided after discovery).
  assert.ok(cold.imports > 1, `${cold.imports} built-in modules imported`);
  assert.ok(cold.listed.length >= cold.imports, cold.listed.join("; "));
  assert.ok(cold.listed.some((t) => t.startsWith("files/WordCount: ")), cold.listed.join("; "));
  assert.equal(cold.sandboxes, 1, "all of corral's own toolsets in one discovery sandbox");
  // Warm: the cache says what they hold; nothing imported, hashed or started.
  const warm = await _discover(base, [], cache, { builtins: true });
  assert.deepEqual([warm.imports, warm.hashed, warm.sandboxes, warm.infoRuns], [0, 0, 0, 0]);
  assert.deepEqual(warm.listed, cold.listed);
});

Deno.test("a bad discovery_batch is refused naming its file and key", () => {
  const parse = (v: unknown) =>
    parsePolicy(
      JSON.stringify({ plugins: { default: { discovery_batch: v } } }),
      "/etc/corral/permissions.json",
      "/etc/corral",
    );
  // Control: a good value is taken.
  assert.equal(parse(16).plugin("any").discovery_batch, 16);
  for (const v of [0, 2.5, "8", 5000]) {
    assert.throws(
      () => parse(v),
      /\/etc\/corral\/permissions\.json: plugins\.default\.discovery_batch: /,
      String(v),
    );
  }
});
