// No import circles in core/: files that import each other in a loop hold one
// concept split in two, or two concepts that lean on each other; a reader cannot
// read either first. The graph is the static one (imports and re-exports, types
// included, of every file but tests); a lazy import() is not an edge, since it
// is how a process loads only what it runs. A circle is broken along its
// concepts: what both sides need goes to the lower file, or to a file of its own.
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = new URL("../", import.meta.url).pathname;

/** Files (relative paths) and the files each imports. */
type Graph = Map<string, string[]>;

/** One circle: its files, sorted, and one loop through all of them that shows it. */
interface Circle {
  files: string[];
  loop: string[];
}

/**
 * The specifiers of a module's static imports and re-exports (`import type`
 * too): statements at the start of a line, as `deno fmt` writes them. Doc
 * examples (` * import …`) and lazy `import()` are not read.
 */
function staticSpecifiers(text: string): string[] {
  const re = /^(?:import|export)\b[^;"'`]*?\bfrom\s*["']([^"']+)["']|^import\s*["']([^"']+)["']/gm;
  return [...text.matchAll(re)].map((m) => m[1] ?? m[2]);
}

/** Every `.ts` file under `dir` (absolute), tests (`*_test.ts`) left out. */
async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) out.push(...await sourceFiles(p));
    else if (e.isFile && e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) out.push(p);
  }
  return out;
}

/** The static import graph of the source files under `root/dir`, by paths relative to `root`. */
async function importGraph(root: string, dir: string): Promise<Graph> {
  const files = (await sourceFiles(join(root, dir))).map((f) => relative(root, f)).sort();
  const known = new Set(files);
  const graph: Graph = new Map();
  for (const file of files) {
    const targets = new Set<string>();
    for (const spec of staticSpecifiers(await Deno.readTextFile(join(root, file)))) {
      if (!spec.startsWith("./") && !spec.startsWith("../")) continue; // npm:, node:, a map entry
      const target = relative(root, resolve(root, dirname(file), spec));
      if (known.has(target)) targets.add(target);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/**
 * The circles of `graph`: its strongly connected components of two files or
 * more, and a file that imports itself (Tarjan's algorithm), each with a loop
 * through all of its files. Sorted by their first file.
 */
function findCircles(graph: Graph): Circle[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: Circle[] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) {
      const files = component.sort();
      circles.push({ files, loop: _loop(graph, new Set(files)) });
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return circles.sort((a, b) => a.files[0].localeCompare(b.files[0]));
}

/**
 * A closed walk through every file of one circle, from its first file: the
 * shortest path inside the circle to each next file not yet on the walk, and
 * back to the start.
 */
function _loop(graph: Graph, inside: Set<string>): string[] {
  const files = [...inside].sort();
  const walk = [files[0]];
  const seen = new Set(walk);
  const pathTo = (from: string, to: (f: string) => boolean): string[] => {
    const back = new Map<string, string>();
    const queue = [from];
    while (queue.length) {
      const f = queue.shift()!;
      for (const g of (graph.get(f) ?? []).filter((x) => inside.has(x))) {
        if (back.has(g) || g === from && !to(g)) continue;
        back.set(g, f);
        if (to(g)) {
          const path = [g];
          for (let p = f; p !== from; p = back.get(p)!) path.unshift(p);
          return path;
        }
        queue.push(g);
      }
    }
    return [];
  };
  while (seen.size < files.length) {
    const step = pathTo(walk.at(-1)!, (f) => !seen.has(f));
    step.forEach((f) => seen.add(f));
    walk.push(...step);
  }
  walk.push(...pathTo(walk.at(-1)!, (f) => f === files[0]));
  return walk;
}

/** The circles as a message: each loop, with the names to look at. */
function circlesText(circles: Circle[]): string {
  return `${circles.length} import circle(s); break each along its concepts ` +
    `(move what both sides need to the lower file, or to a file of its own):\n` +
    circles.map((c) => `  ${c.loop.join(" -> ")}`).join("\n");
}

Deno.test("core/ has no import circle", async () => {
  const graph = await importGraph(ROOT, "core");
  // The graph is read: every folder's face re-exports from its files.
  const faces = [...graph.keys()].filter((f) => /^core\/[^/]+\/mod\.ts$/.test(f));
  assert.ok(faces.length >= 15, `found ${faces.length} faces in core/`);
  for (const face of faces) assert.ok(graph.get(face)!.length > 0, `${face} imports nothing`);
  const circles = findCircles(graph);
  assert.deepEqual(circles, [], circlesText(circles));
});

Deno.test("the circle finder names the files of each circle, and a loop through them", () => {
  const graph: Graph = new Map([
    ["a.ts", ["b.ts"]],
    ["b.ts", ["c.ts", "f.ts"]],
    ["c.ts", ["a.ts"]],
    ["d.ts", ["a.ts"]],
    ["e.ts", ["e.ts"]],
    ["f.ts", ["g.ts"]],
    ["g.ts", []],
    // Two loops that share a file are one circle.
    ["p.ts", ["q.ts"]],
    ["q.ts", ["p.ts", "r.ts"]],
    ["r.ts", ["q.ts"]],
  ]);
  assert.deepEqual(findCircles(graph), [
    { files: ["a.ts", "b.ts", "c.ts"], loop: ["a.ts", "b.ts", "c.ts", "a.ts"] },
    { files: ["e.ts"], loop: ["e.ts", "e.ts"] },
    { files: ["p.ts", "q.ts", "r.ts"], loop: ["p.ts", "q.ts", "r.ts", "q.ts", "p.ts"] },
  ]);
  // Control: the same graph with one import cut has no circle left there.
  graph.set("c.ts", []);
  assert.deepEqual(findCircles(graph).map((c) => c.files[0]), ["e.ts", "p.ts"]);
  assert.match(circlesText(findCircles(graph)), /^2 import circle\(s\).*\n {2}e\.ts -> e\.ts\n/);
});

Deno.test("a circle written into a tree of files is caught, through a type-only import too", async () => {
  const root = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(root, "core/a"), { recursive: true });
    const write = (rel: string, text: string) => Deno.writeTextFile(join(root, rel), text);
    await write(
      "core/a/record.ts",
      '/**\n * @example\n * ```ts\n * import { log } from "./log.ts";\n * ```\n */\n' +
        'import type { Line } from "./log.ts";\nexport type Record = { line: Line };\n',
    );
    await write(
      "core/a/log.ts",
      'import {\n  type Record,\n} from "./record.ts";\nimport { z } from "npm:zod";\n' +
        'export type Line = string;\nexport const lazy = () => import("./lazy.ts");\n' +
        "export const log = (r: Record) => z.string().parse(r.line);\n",
    );
    await write("core/a/lazy.ts", 'import { log } from "./log.ts";\nexport const again = log;\n');
    await write("core/a/mod.ts", 'export * from "./log.ts";\nimport "./record.ts";\n');
    await write("core/a/log_test.ts", 'import { log } from "./mod.ts";\nexport { log };\n');
    const graph = await importGraph(root, "core");
    assert.deepEqual(Object.fromEntries(graph), {
      "core/a/lazy.ts": ["core/a/log.ts"],
      "core/a/log.ts": ["core/a/record.ts"],
      "core/a/mod.ts": ["core/a/log.ts", "core/a/record.ts"],
      "core/a/record.ts": ["core/a/log.ts"],
    });
    const circles = findCircles(graph);
    assert.deepEqual(circles, [{
      files: ["core/a/log.ts", "core/a/record.ts"],
      loop: ["core/a/log.ts", "core/a/record.ts", "core/a/log.ts"],
    }]);
    assert.match(
      circlesText(circles),
      /core\/a\/log\.ts -> core\/a\/record\.ts -> core\/a\/log\.ts/,
    );
    // Control: the type moved to the lower file, the circle is gone.
    await write(
      "core/a/record.ts",
      "export type Line = string;\nexport type Record = { line: Line };\n",
    );
    assert.deepEqual(findCircles(await importGraph(root, "core")), []);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
