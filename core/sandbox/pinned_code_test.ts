import assert from "node:assert/strict";
import { join } from "node:path";
import { CORE_DIR } from "../config/install_dir.ts";
import { pinGraph } from "./module_graph.ts";
import { pinnedCode } from "./pinned_code.ts";

// A store that cannot be made: its parent is a file (root writes anywhere, so no chmod).
async function _unmakeableStore(): Promise<{ base: string; store: string }> {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral-pin-" }));
  await Deno.writeTextFile(join(base, "file"), "");
  return { base, store: join(base, "file", "pinned") };
}

Deno.test("a store that cannot be written still serves corral's own code, imported in place", async () => {
  const { base, store } = await _unmakeableStore();
  try {
    const own = join(CORE_DIR, "mod.ts");
    const code = await pinnedCode(await pinGraph([own]), store, "");
    assert.ok(typeof code !== "string", String(code));
    assert.equal(code.paths.get(own), own);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("a store that cannot be written refuses a plugin it cannot pin (never its own path)", async () => {
  const { base, store } = await _unmakeableStore();
  try {
    const plugin = join(base, "p.ts");
    await Deno.writeTextFile(plugin, "export const a = 1;\n");
    const code = await pinnedCode(await pinGraph([plugin]), store, "");
    assert.equal(typeof code, "string");
    assert.match(String(code), /^not started: cannot pin ".*\/p\.ts": .*code store .*file\/pinned/);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

Deno.test("a copy that cannot be written is a refusal, not a crash", async () => {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral-pin-" }));
  try {
    const store = join(base, "store");
    const plugin = join(base, "p.ts");
    await Deno.writeTextFile(plugin, "export const a = 1;\n");
    const pins = await pinGraph([plugin]);
    const first = await pinnedCode(pins, store, "x");
    assert.ok(typeof first !== "string");
    // The set's folder is taken by a file: its copies cannot be made there.
    const second = await pinnedCode(pins, store, "y");
    assert.ok(typeof second !== "string");
    await Deno.remove(second.dir, { recursive: true }).catch(() => {});
    await Deno.writeTextFile(second.dir, "");
    const third = await pinnedCode(pins, store, "y");
    assert.equal(typeof third, "string");
    assert.match(String(third), /^not started: cannot pin ".*\/p\.ts"/);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
