import assert from "node:assert/strict";
import { loadPlugins } from "../../../core/plugins/_load_plugins.ts";
import { Reporter } from "../../../core/tool/reporter.ts";

const tool = (desc: string) =>
  `export const TOOL_CONFIGS = [{ name: "Cached", description: "${desc}", function: () => "x" }];\n`;

async function load(dir: string, cache: string) {
  const { registry } = await loadPlugins({
    dirs: [dir],
    workspace: dir,
    cacheDir: cache,
    reporter: new Reporter({ quiet: true }),
  });
  await registry.close();
  return registry;
}

Deno.test("the discovery cache re-reads a file whose content changed at the same size", async () => {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_cache_" }));
  const file = `${base}/tools/cached.ts`;
  await Deno.mkdir(`${base}/tools`);
  try {
    await Deno.writeTextFile(file, tool("aaaa"));
    const old = new Date(Date.now() - 60_000);
    await Deno.utime(file, old, old); // old enough for the size+mtime index
    assert.equal((await load(`${base}/tools`, `${base}/cache`)).imports, 1);
    const warm = await load(`${base}/tools`, `${base}/cache`);
    assert.equal(warm.imports, 0, "unchanged: served from the cache");
    assert.equal(warm.get("Cached")?.description, "aaaa");

    // Same size, new content, an mtime that differs: the index must not trust it.
    await Deno.writeTextFile(file, tool("bbbb"));
    const later = new Date(Date.now() - 30_000);
    await Deno.utime(file, later, later);
    const changed = await load(`${base}/tools`, `${base}/cache`);
    assert.equal(changed.imports, 1, "changed content is imported again");
    assert.equal(changed.get("Cached")?.description, "bbbb");

    // Just written (a racy mtime): hashed again, never trusted by size+mtime.
    await Deno.writeTextFile(file, tool("cccc"));
    const fresh = await load(`${base}/tools`, `${base}/cache`);
    assert.equal(fresh.get("Cached")?.description, "cccc");
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
