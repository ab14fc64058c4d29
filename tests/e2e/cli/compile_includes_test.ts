// A compiled corral runs everything it starts (issue 39). This walks corral's
// code for every file loaded by path or by a computed specifier, or bound into
// a namespace, at run time: `new URL("…", import.meta.url)`, core/cli/cli.ts's
// `_load("…")`, `new Worker(…)`, computed `import(…)`, `--preload`, and
// install-relative paths ("core/….ts") handed to core/base/self_run.ts. Each
// such file must be embedded in the binary (core/cli/compile.ts
// `compileIncludes()` or the static graph it pulls in); a program (a module
// that runs when started) must also be started through the binary, as one of
// SELF_PROGRAMS that core/cli/cli.ts dispatches; a file handed to another program's
// `--preload` must come out of the binary by writeSelfFiles. The compiled
// binary itself cannot be built here (DENO_FACTS.md); tests/e2e/cli/self_run_test.ts
// runs each program the way the binary does.
import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { compileIncludes } from "../../../core/cli/compile.ts";
import { SELF_PROGRAMS, WRITTEN_OUT } from "../../../core/base/mod.ts";
import { localModuleGraph } from "../../../core/sandbox/module_graph.ts";
import { ROOT } from "../../../testing/mod.ts";

/** Computed `import(…)` of tool code, not corral's own (built-in tools are embedded by `toolModules`). */
const TOOL_CODE_IMPORTS: Array<[string, string]> = [
  [
    "core/sandbox/sandbox_runtime.ts",
    'import(module.startsWith("/") ? `file://${module}` : module)',
  ],
  ["core/sandbox/sandbox_child.ts", "import(`file://${m}`)"],
  // `corral harness FILE`: the user's tool file, run by Deno (a compiled corral refuses the command).
  ["core/tool/harness_main.ts", "import(`file://${resolve(file)}`)"],
  ["core/cli/cli.ts", "import(new URL(path, import.meta.url).href)"], // _load: its call sites are walked
  // corral's own host bundle (core/cli/bundle_build.ts), never used by a compiled binary.
  ["core/cli/host_bundle.ts", "import(new URL(`${record.dir}/entry.js`, _DIR).href)"],
];

/** One finding: a file corral loads or starts by path at run time, and where. */
interface Use {
  from: string;
  target: string;
  how: "url" | "load" | "worker" | "self";
}

/** Every use of a file by path in `sources` (install-relative name → text); and problems found. */
export function findUses(sources: Map<string, string>): { uses: Use[]; problems: string[] } {
  const uses: Use[] = [];
  const problems: string[] = [];
  const constants = new Map<string, string>(); // NAME = new URL("lit", import.meta.url) → target
  const at = (from: string, lit: string) => relative(ROOT, resolve(ROOT, dirname(from), lit));
  // Code only: doc comments (their examples) and line comments are not run.
  const code = new Map(
    [...sources].map((
      [f, t],
    ) => [f, t.split("\n").filter((l) => !/^\s*(\*|\/\*\*|\/\/)/.test(l)).join("\n")]),
  );
  for (const [from, text] of code) {
    for (const m of text.matchAll(/new URL\(\s*"([^"]+)",\s*import\.meta\.url\s*\)/g)) {
      const target = at(from, m[1]);
      if (!/\.\w+$/.test(m[1])) continue; // a folder: the install root (paths below it: "self")
      uses.push({ from, target, how: "url" });
      const name = /(\w+)(?::\s*\w+)?\s*=\s*$/.exec(text.slice(0, m.index))?.[1];
      if (name) constants.set(name, target);
    }
    for (const m of text.matchAll(/_load<[^>]*>\(\s*"([^"]+)"/g)) {
      uses.push({ from, target: at(from, m[1]), how: "load" });
    }
    // Install-relative paths of corral's own code, as self_run.ts takes them.
    for (const m of text.matchAll(/"((?:core|toolsets)\/[\w/]+\.ts)"/g)) {
      if (from.endsWith("_test.ts")) continue;
      uses.push({ from, target: m[1], how: "self" });
    }
  }
  for (const [from, text] of code) {
    for (const m of text.matchAll(/new Worker\(\s*(new URL\(\s*(?:"[^"]+"|\w+)\s*,[^)]*\)|\w+)/g)) {
      const arg = m[1];
      const lit = /new URL\(\s*"([^"]+)",\s*import\.meta\.url/.exec(arg)?.[1];
      const name = /(?:new URL\(\s*)?(\w+)/.exec(arg)?.[1] ?? "";
      const target = lit ? at(from, lit) : constants.get(name);
      if (target) uses.push({ from, target, how: "worker" });
      else problems.push(`${from}: new Worker(${arg}) names no file this walk can follow`);
    }
    for (const m of text.matchAll(/\bimport\(([^)"'`][^\n]*|`[^`]*\$\{[^\n]*)/g)) {
      const site = `import(${m[1]}`;
      // A literal path through new URL: followed above.
      const literal = /^import\(new URL\(\s*"[^"]+",\s*import\.meta\.url\s*\)/.test(site);
      const known = literal || TOOL_CODE_IMPORTS.some(([f, s]) => f === from && site.startsWith(s));
      if (!known) problems.push(`${from}: a computed ${site.slice(0, 80)}`);
    }
    if (/["'`]--preload/.test(text) && !/writeSelfFiles\(/.test(text)) {
      problems.push(`${from}: --preload of a file that does not come from writeSelfFiles`);
    }
  }
  return { uses, problems };
}

/** What must hold of each use, given the files the binary embeds. */
export function checkUses(
  uses: Use[],
  embedded: Set<string>,
  programs: Set<string>,
  isProgram: (file: string) => boolean,
): string[] {
  const problems: string[] = [];
  for (const u of uses) {
    if (!embedded.has(u.target)) {
      problems.push(`${u.target} (${u.how}, from ${u.from}) is not embedded in the binary`);
    }
    if (isProgram(u.target) && !programs.has(u.target)) {
      problems.push(`${u.target} (from ${u.from}) is a program not started through the binary`);
    }
  }
  return problems;
}

async function _sources(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(join(ROOT, dir))) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(rel);
      else if (/\.ts$/.test(e.name) && !/_test\.ts$/.test(e.name)) {
        out.set(rel, await Deno.readTextFile(join(ROOT, rel)));
      }
    }
  };
  await walk("core");
  await walk("toolsets");
  out.set("main.ts", await Deno.readTextFile(join(ROOT, "main.ts")));
  return out;
}

/** The files `deno compile` embeds: main.ts, the includes, and their static graphs. */
async function _embedded(): Promise<Set<string>> {
  const includes = await compileIncludes();
  const modules = includes.filter((f) => f.endsWith(".ts"));
  const map = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))).imports ?? {};
  const graph = await localModuleGraph([join(ROOT, "main.ts"), ...modules], map);
  return new Set([...includes, ...graph].map((f) => relative(ROOT, f)));
}

/** A module that runs when started: it reads its own arguments or checks `import.meta.main`. */
function _isProgram(sources: Map<string, string>): (file: string) => boolean {
  return (file) => {
    const text = sources.get(file) ?? "";
    return /^if \(import\.meta\.main\)/m.test(text) || /^const .*= Deno\.args;/m.test(text);
  };
}

Deno.test("every file corral loads or starts by path is embedded, and every program it starts runs as the binary", async () => {
  const sources = await _sources();
  const { uses, problems } = findUses(sources);
  const programs = new Set<string>(Object.values(SELF_PROGRAMS));
  const all = [...problems, ...checkUses(uses, await _embedded(), programs, _isProgram(sources))];
  assert.deepEqual(all, []);
  // The walk found what it is about (not an empty pass): each program, the worker, the preload.
  const targets = new Set(uses.map((u) => u.target));
  for (
    const f of [
      "core/layers/tree_applier.ts",
      "core/hosted/egress_bridge.ts",
      "core/sandbox/sandbox_child.ts",
      "core/sandbox/sandbox_worker.ts",
      "core/hosted/hosted_server.ts",
      "core/egress/forward_direct.ts",
    ]
  ) assert.ok(targets.has(f), `the walk did not find ${f}`);
  // Each computed import of tool code it allows is still where it says.
  for (const [file, site] of TOOL_CODE_IMPORTS) {
    assert.ok(sources.get(file)?.includes(site), `${file} no longer holds ${site}`);
  }
});

Deno.test("every program started through the binary is dispatched by core/cli/cli.ts and embedded", async () => {
  const cli = await Deno.readTextFile(join(ROOT, "core/cli/cli.ts"));
  const includes = new Set((await compileIncludes()).map((f) => relative(ROOT, f)));
  for (const [name, module] of Object.entries(SELF_PROGRAMS)) {
    assert.match(cli, new RegExp(`argv\\[0\\] === "${name}"`), `cli.ts does not run ${name}`);
    const rel = relative(join(ROOT, "core/cli"), join(ROOT, module));
    const spec = rel.startsWith(".") ? rel : `./${rel}`;
    assert.ok(cli.includes(`_load<typeof import("${spec}")>`), `${name} loads ${module}`);
    assert.ok(includes.has(module), `${module} is not in compileIncludes()`);
  }
  for (const f of Object.values(WRITTEN_OUT).flat()) {
    assert.ok(includes.has(f), `${f} (written out of the binary) is not in compileIncludes()`);
  }
});

Deno.test("the walk attacks: a file started by path, a file not embedded, an unknown computed import, a bare --preload", () => {
  const sources = new Map([
    ["core/x/a.ts", 'const ENTRY = new URL("./runner.ts", import.meta.url).pathname;\n'],
    ["core/x/runner.ts", "if (import.meta.main) await go();\n"],
    ["core/x/b.ts", 'new Worker(new URL(ENTRY, "file:///"), {});\nawait import(name);\n'],
    ["core/x/c.ts", "args.push(`--preload=${file}`);\n"],
  ]);
  const { uses, problems } = findUses(sources);
  assert.deepEqual(uses.map((u) => [u.target, u.how]), [
    ["core/x/runner.ts", "url"],
    ["core/x/runner.ts", "worker"],
  ]);
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.match(problems[0], /computed import\(name\)/);
  assert.match(problems[1], /--preload of a file that does not come from writeSelfFiles/);
  const found = checkUses(uses, new Set(), new Set(), _isProgram(sources));
  assert.ok(found.some((p) => /runner\.ts .* is not embedded/.test(p)), found.join("\n"));
  assert.ok(found.some((p) => /is a program not started through the binary/.test(p)));
  // Control: embedded and started through the binary, it passes.
  const ok = checkUses(
    uses,
    new Set(["core/x/runner.ts"]),
    new Set(["core/x/runner.ts"]),
    () => true,
  );
  assert.deepEqual(ok, []);
});
