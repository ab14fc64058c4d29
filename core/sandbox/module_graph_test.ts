import assert from "node:assert/strict";
import { join } from "node:path";
import { localModuleGraph } from "./module_graph.ts";

async function _tree(files: Record<string, string>): Promise<string> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral-graph-" }));
  for (const [name, text] of Object.entries(files)) {
    const path = join(dir, name);
    await Deno.mkdir(join(path, ".."), { recursive: true });
    await Deno.writeTextFile(path, text);
  }
  return dir;
}

async function _graph(
  files: Record<string, string>,
  entry: string,
  importMap?: (dir: string) => Record<string, string>,
): Promise<string[]> {
  const dir = await _tree(files);
  try {
    const list = await localModuleGraph([join(dir, entry)], importMap?.(dir));
    return list.map((f) => f.startsWith(dir + "/") ? f.slice(dir.length + 1) : f);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("localModuleGraph follows local static imports, re-exports and type imports", async () => {
  const files = await _graph({
    "main.ts": [
      'import { a } from "./a.ts";',
      "import {",
      "  b,",
      '} from "./lib/b.ts";',
      'export * from "./c.ts";',
      'export { d } from "./d.ts";',
      'import type { T } from "./types.ts";',
      'import "./side_effect.ts";',
    ].join("\n"),
    "a.ts": "export const a = 1;",
    "lib/b.ts": 'import { shared } from "../shared.ts";\nexport const b = shared;',
    "shared.ts": "export const shared = 2;",
    "c.ts": "export const c = 3;",
    "d.ts": "export const d = 4;",
    "types.ts": "export type T = string;",
    "side_effect.ts": "console.log('x');",
    "unused.ts": "export const unused = 0;",
  }, "main.ts");
  assert.deepEqual(files, [
    "a.ts",
    "c.ts",
    "d.ts",
    "lib/b.ts",
    "main.ts",
    "shared.ts",
    "side_effect.ts",
    "types.ts",
  ]);
});

Deno.test("localModuleGraph does not follow npm:, node:, jsr: or remote specifiers", async () => {
  const files = await _graph({
    "main.ts": [
      'import { z } from "npm:zod@3";',
      'import fs from "node:fs";',
      'import { assert } from "jsr:@std/assert";',
      'import x from "https://example.com/x.ts";',
      'import bare from "zod";',
    ].join("\n"),
  }, "main.ts");
  assert.deepEqual(files, ["main.ts"]);
});

Deno.test("localModuleGraph follows a dynamic import of a literal path", async () => {
  const files = await _graph({
    "main.ts": "const m = await import(\"./lazy.ts\");\nconst n = await import( './lazy2.ts' );",
    "lazy.ts": "export const lazy = 1;",
    "lazy2.ts": "export const lazy2 = 1;",
  }, "main.ts");
  assert.deepEqual(files, ["lazy.ts", "lazy2.ts", "main.ts"]);
});

Deno.test("localModuleGraph does not follow a dynamic import of a computed path", async () => {
  const files = await _graph({
    "main.ts": 'const name = "./hidden.ts";\nawait import(name);',
    "hidden.ts": "export const h = 1;",
  }, "main.ts");
  assert.deepEqual(files, ["main.ts"]);
});

Deno.test("localModuleGraph handles import cycles", async () => {
  const files = await _graph({
    "a.ts": 'import { b } from "./b.ts";\nexport const a = 1;',
    "b.ts": 'import { c } from "./c.ts";\nexport const b = 2;',
    "c.ts": 'import { a } from "./a.ts";\nexport const c = 3;',
  }, "a.ts");
  assert.deepEqual(files, ["a.ts", "b.ts", "c.ts"]);
});

Deno.test("localModuleGraph follows absolute paths and file: URLs", async () => {
  const dir = await _tree({ "abs.ts": "export const abs = 1;", "url.ts": "export const u = 1;" });
  try {
    const main = join(dir, "main.ts");
    await Deno.writeTextFile(
      main,
      `import "${join(dir, "abs.ts")}";\nimport "file://${join(dir, "url.ts")}";`,
    );
    assert.deepEqual(await localModuleGraph([main]), [
      join(dir, "abs.ts"),
      join(dir, "main.ts"),
      join(dir, "url.ts"),
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("localModuleGraph keeps a missing imported file in the list", async () => {
  const files = await _graph({ "main.ts": 'import "./gone.ts";' }, "main.ts");
  assert.deepEqual(files, ["gone.ts", "main.ts"]);
});

Deno.test("localModuleGraph follows import-map entries that point at local files only", async () => {
  const files = await _graph(
    {
      "main.ts": 'import "@lib/util.ts";\nimport "exact";\nimport "zod";',
      "vendor/lib/util.ts": "export const u = 1;",
      "vendor/exact.ts": "export const e = 1;",
    },
    "main.ts",
    (dir) => ({
      "@lib/": `${dir}/vendor/lib/`,
      "exact": `${dir}/vendor/exact.ts`,
      "zod": "npm:zod@3",
    }),
  );
  assert.deepEqual(files, ["main.ts", "vendor/exact.ts", "vendor/lib/util.ts"]);
});

Deno.test("localModuleGraph returns the union of several entries, sorted, without duplicates", async () => {
  const dir = await _tree({
    "one.ts": 'import "./shared.ts";',
    "two.ts": 'import "./shared.ts";',
    "shared.ts": "export {};",
  });
  try {
    assert.deepEqual(await localModuleGraph([join(dir, "two.ts"), join(dir, "one.ts")]), [
      join(dir, "one.ts"),
      join(dir, "shared.ts"),
      join(dir, "two.ts"),
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
