// ARCHITECTURE.md stays true: every path it names exists, imports follow its
// layers, the sandbox realm and the host realm stay apart, and no source file
// outside tests grows past 800 lines (past 600 it is named: one concept a file).
import assert from "node:assert/strict";
import { basename, dirname, relative } from "node:path";
import { localModuleGraph } from "../core/sandbox/module_graph.ts";
import { sandboxEntryFiles } from "../core/sandbox/sandbox.ts";
import { ROOT } from "../testing/mod.ts";

/** core/ folders, bottom first; a folder may import its own and lower layers only. */
const LAYERS = [
  ["tool"],
  ["guard"],
  ["base"],
  ["wire"],
  ["audit"],
  ["telemetry"],
  ["seccomp"],
  ["jail"],
  ["egress"],
  ["config"],
  ["layers"],
  ["sandbox"],
  ["hosted"],
  ["registry"],
  ["identity"],
  ["plugins", "mcp"],
  ["cli"],
];
/** A source file this long fails the test; past {@link WARN_LINES} it is named on stderr. */
const MAX_LINES = 800;
const WARN_LINES = 600;

/** Every file git knows, relative to the root (deleted files are left out). */
async function repoFiles(): Promise<string[]> {
  const out = await new Deno.Command("git", {
    args: ["ls-files", "--cached", "--others", "--exclude-standard"],
    cwd: ROOT,
    stdout: "piped",
  }).output();
  assert.ok(out.success, "git ls-files failed");
  return new TextDecoder().decode(out.stdout).split("\n").filter((f) => {
    if (!f) return false;
    try {
      return Deno.statSync(`${ROOT}${f}`).isFile;
    } catch {
      return false;
    }
  });
}

/**
 * Local import targets of one file (relative to the root): static imports,
 * re-exports, literal dynamic imports, type-only imports and imports in doc
 * examples (stricter than the runtime). Computed specifiers are not seen.
 */
async function importsOf(file: string): Promise<string[]> {
  const graph = await localModuleGraph([`${ROOT}${file}`], {}, (f) =>
    // Only the file itself: the graph's first step.
    f === `${ROOT}${file}` ? Deno.readTextFile(f) : Promise.resolve(""));
  return graph.map((f) => relative(ROOT, f)).filter((f) => f !== file);
}

/** The layer of a core/ file, or -1 when it sits in no layer folder. */
function layerOf(file: string): number {
  const parts = file.split("/");
  if (parts.length < 3) return -1;
  return LAYERS.findIndex((l) => l.includes(parts[1]));
}

Deno.test("every path ARCHITECTURE.md names exists", async () => {
  const doc = await Deno.readTextFile(`${ROOT}ARCHITECTURE.md`);
  const files = await repoFiles();
  const names = new Set(files.map((f) => basename(f)));
  const dirs = new Set(files.flatMap((f) => {
    const parts = f.split("/").slice(0, -1);
    return parts.map((_, i) => parts.slice(0, i + 1).join("/") + "/");
  }));
  const paths = new Set<string>();
  for (
    const m of doc.matchAll(/(?:^|[\s`(|])((?:core|toolsets|plugins|tests|bench|docs)\/[\w./-]*)/g)
  ) {
    paths.add(m[1].replace(/[.,]$/, ""));
  }
  const bare = [...doc.matchAll(/`([\w.-]+\.(?:ts|json|md))`/g)].map((m) => m[1]);
  assert.ok(paths.size > 40, `ARCHITECTURE.md names its files (found ${paths.size})`);
  for (const p of paths) {
    assert.ok(files.includes(p) || dirs.has(p.endsWith("/") ? p : `${p}/`), `${p} does not exist`);
  }
  // corral.json is the operator's file, not one of corral's.
  for (const b of bare) assert.ok(names.has(b) || b === "corral.json", `no file is named ${b}`);
  for (const folder of LAYERS.flat()) {
    assert.ok(doc.includes(`\`core/${folder}/\``), `ARCHITECTURE.md describes core/${folder}/`);
  }
  assert.ok(
    doc.includes(
      "cli > mcp, plugins > identity > registry > hosted > sandbox > layers > config > egress > jail > seccomp > telemetry > audit > wire > base > guard > tool",
    ),
    "ARCHITECTURE.md states the same layers as this test",
  );
});

Deno.test("README.md and docs/ name only core/ files that exist, and link only to existing files", async () => {
  const files = new Set(await repoFiles());
  const docs = [...Deno.readDirSync(`${ROOT}docs`)].map((e) => `docs/${e.name}`).sort();
  for (const doc of ["README.md", ...docs, "bench/analysis.md"]) {
    const text = await Deno.readTextFile(`${ROOT}${doc}`);
    const core = [...text.matchAll(/(?:^|[\s`'"(])(?:\.\/)?(core\/[\w/-]+\.ts)/g)].map((m) => m[1]);
    assert.ok(doc !== "docs/security.md" || core.length > 3, `${doc} names core/ files`);
    for (const p of core) assert.ok(files.has(p), `${doc}: ${p} does not exist`);
    for (const m of text.matchAll(/\]\(([^)#:\s]+)(?:#[^)]*)?\)/g)) {
      const target = relative(ROOT, `${ROOT}${dirname(doc)}/${m[1]}`);
      assert.ok(files.has(target), `${doc}: the link ${m[1]} leads nowhere`);
    }
  }
});

Deno.test("core/ folders import only their own and lower layers", async () => {
  const files = (await repoFiles()).filter((f) => f.startsWith("core/") && f.endsWith(".ts"));
  const wrong: string[] = [];
  for (const file of files) {
    if (file === "core/mod.ts" || file === "core/testing.ts") continue; // checked below
    const from = layerOf(file);
    if (from < 0) {
      wrong.push(`${file} is in no layer (core/ holds only mod.ts and the layer folders)`);
      continue;
    }
    for (const target of await importsOf(file)) {
      if (!target.startsWith("core/")) {
        // Tests may import fixtures and main.ts; corral's own code imports only core/.
        if (!file.endsWith("_test.ts")) wrong.push(`${file} -> ${target} (outside core/)`);
        continue;
      }
      if (target === "core/mod.ts") {
        if (!file.endsWith("_test.ts")) wrong.push(`${file} -> core/mod.ts`);
        continue;
      }
      const to = layerOf(target);
      if (to < 0) wrong.push(`${file} -> ${target} (in no layer)`);
      else if (to > from || (to === from && target.split("/")[1] !== file.split("/")[1])) {
        wrong.push(`${file} -> ${target}`);
      }
    }
  }
  assert.deepEqual(wrong, [], "imports against the layers");
});

Deno.test("core/mod.ts re-exports only core/tool/ and core/guard/; tool modules import no host code", async () => {
  for (const entry of ["core/mod.ts", "core/testing.ts"]) {
    for (const target of await importsOf(entry)) {
      assert.match(target, /^core\/(tool|guard)\/mod\.ts$/, `${entry} imports ${target}`);
    }
  }
  const tools = (await repoFiles()).filter((f) =>
    /^(toolsets|plugins)\/.*\.ts$/.test(f) && !f.endsWith("_test.ts")
  );
  assert.ok(tools.length > 10);
  for (const file of tools) {
    for (const target of await importsOf(file)) {
      if (!target.startsWith("core/")) continue;
      assert.match(
        target,
        /^core\/(mod\.ts|tool\/mod\.ts|guard\/mod\.ts)$/,
        `${file} imports ${target}`,
      );
    }
  }
});

Deno.test("the sandbox realm loads no host decision code; the host loads no tool module", async () => {
  const sandbox = (await sandboxEntryFiles()).map((f) => relative(ROOT, f));
  assert.ok(sandbox.includes("core/sandbox/sandbox_worker.ts"));
  for (const f of sandbox) {
    assert.match(f, /^core\/(tool|guard|sandbox)\//, `the sandbox entry points import ${f}`);
  }
  // main.ts loads core/cli/cli.ts, and that each command's module, by a computed specifier:
  // those are entries too.
  const cli = await Deno.readTextFile(`${ROOT}core/cli/cli.ts`);
  const loaded = [...cli.matchAll(/_load<typeof import\("([^"]+)"\)>/g)].map((m) =>
    new URL(m[1], `file://${ROOT}core/cli/`).pathname
  );
  assert.ok(loaded.length >= 15, "core/cli/cli.ts loads its commands by _load");
  const host = (await localModuleGraph([`${ROOT}main.ts`, `${ROOT}core/cli/cli.ts`, ...loaded]))
    .map((f) => relative(ROOT, f));
  assert.ok(
    host.includes("core/registry/registry.ts") && host.includes("core/cli/_mcp_command.ts"),
  );
  for (const f of host) {
    assert.ok(!/^(toolsets|plugins|tests)\//.test(f), `the host's import graph holds ${f}`);
  }
});

Deno.test(`no source file outside tests is over ${MAX_LINES} lines`, async () => {
  const sources = (await repoFiles()).filter((f) =>
    /\.(ts|js|mjs)$/.test(f) && !f.startsWith("tests/") && !/_test\.(ts|js|mjs)$/.test(f)
  );
  assert.ok(sources.length > 50);
  const long: string[] = [];
  for (const f of sources) {
    const lines = (await Deno.readTextFile(`${ROOT}${f}`)).split("\n").length - 1;
    if (lines > MAX_LINES) long.push(`${f}: ${lines} lines`);
    else if (lines > WARN_LINES) {
      console.warn(`${f}: ${lines} lines, over ${WARN_LINES}: does it hold more than one concept?`);
    }
  }
  assert.deepEqual(long, []);
});

Deno.test("JSDoc examples assert for real: no console.assert, which only logs", async () => {
  const offenders: string[] = [];
  for (const dir of ["core", "toolsets", "plugins"]) {
    for await (const f of _walkTs(`${ROOT}${dir}`)) {
      if (f.endsWith("_test.ts")) continue;
      if ((await Deno.readTextFile(f)).includes("console.assert(")) offenders.push(f);
    }
  }
  assert.deepEqual(offenders, []);
});

async function* _walkTs(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) yield* _walkTs(p);
    else if (e.name.endsWith(".ts")) yield p;
  }
}

/**
 * What `entry` loads before it runs, by Deno's own module graph (static imports only, type-only
 * ones left out as Deno erases them, followed through npm too): corral's files, relative to the
 * root, and the npm packages.
 */
async function _staticGraph(
  entry: string,
): Promise<{ files: string[]; packages: string[]; builtins: string[] }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    roots: string[];
    redirects?: Record<string, string>;
    modules: Array<{
      specifier: string;
      dependencies?: Array<{ code?: { specifier?: string }; isDynamic?: boolean }>;
    }>;
  };
  const bySpec = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>(info.roots);
  const queue = [...info.roots];
  while (queue.length) {
    for (const dep of bySpec.get(queue.pop()!)?.dependencies ?? []) {
      const raw = dep.code?.specifier;
      if (!raw || dep.isDynamic) continue;
      const spec = info.redirects?.[raw] ?? raw;
      if (!seen.has(spec)) seen.add(spec), queue.push(spec);
    }
  }
  return {
    files: [...seen].filter((s) => s.startsWith(`file://${ROOT}`)).map((s) =>
      relative(ROOT, new URL(s).pathname)
    ),
    packages: [
      ...new Set([...seen].filter((s) => s.startsWith("npm:")).map((s) => s.split("/")[1])),
    ],
    builtins: [...seen].filter((s) => s.startsWith("node:")),
  };
}

/** The npm packages `entry` loads before it runs ({@link _staticGraph}). */
async function _staticPackages(entry: string): Promise<string[]> {
  return (await _staticGraph(entry)).packages;
}

Deno.test("a cold call loads no MCP SDK, Ajv, X.509, JWT, Redis or telemetry package before it needs one", async () => {
  for (const entry of ["core/cli/_open_registry.ts", "core/cli/_call_command.ts"]) {
    const packages = await _staticPackages(entry);
    const heavy = packages.filter((p) =>
      /^(@modelcontextprotocol|ajv|@peculiar|jose|@redis|prom-client|@opentelemetry)/.test(p)
    );
    assert.deepEqual(heavy, [], `${entry} imports statically: ${packages.join(", ")}`);
  }
});

Deno.test("corral mcp on stdio loads no HTTP server, identity, X.509, JWT, Redis or telemetry package before it needs one", async () => {
  // `--http` loads core/cli/_serve_mcp_http.ts (hono, identities, tokens) lazily: a stdio start
  // that imported it statically took about 150 ms more to its first answer (bench section 6c).
  const packages = await _staticPackages(`${ROOT}core/cli/_mcp_command.ts`);
  const heavy = packages.filter((p) =>
    /^(@modelcontextprotocol|@hono|hono|ajv|@peculiar|jose|@redis|prom-client|@opentelemetry)/
      .test(p)
  );
  assert.deepEqual(heavy, [], `core/cli/_mcp_command.ts imports statically: ${packages}`);
});

/** Relative specifiers of one file: `static` (import/export … from, in code or doc examples) and `lazy` (`import("…")`). */
function _specifiers(text: string): { static: string[]; lazy: string[] } {
  const fromRe =
    /(?:^|[\s;*])(?:import|export)\s[^;'"]*?from\s*"(\.{1,2}\/[^"]+)"|^\s*\*?\s*import\s+"(\.{1,2}\/[^"]+)"/gm;
  const lazyRe = /import\(\s*"(\.{1,2}\/[^"]+)"\s*\)/g;
  return {
    static: [...text.matchAll(fromRe)].map((m) => m[1] ?? m[2]),
    lazy: [...text.matchAll(lazyRe)].map((m) => m[1]),
  };
}

/** The core/ folder a repository path lies in, or null. */
function _coreFolder(path: string): string | null {
  const parts = path.split("/");
  return parts[0] === "core" && parts.length > 2 ? parts[1] : null;
}

Deno.test("every core/ folder has a face, and code outside a folder enters it only through its mod.ts", async () => {
  const files = await repoFiles();
  const folders = [...new Set(files.map(_coreFolder).filter((f): f is string => f !== null))];
  for (const folder of folders) {
    assert.ok(files.includes(`core/${folder}/mod.ts`), `core/${folder}/ has no mod.ts`);
  }
  const code = files.filter((f) =>
    /\.ts$/.test(f) && !/_test\.ts$/.test(f) && !/^tests\//.test(f) &&
    /^(core|toolsets|plugins|bench|testing)\/|^main\.ts$/.test(f)
  );
  assert.ok(code.length > 200, `found ${code.length} source files`);
  const start = await _startPath();
  const wrong: string[] = [];
  for (const file of code.filter((f) => !start.has(f))) {
    for (const spec of _specifiers(await Deno.readTextFile(`${ROOT}${file}`)).static) {
      const target = relative(ROOT, `${ROOT}${dirname(file)}/${spec}`);
      const folder = _coreFolder(target);
      if (!folder || folder === _coreFolder(file) || target === `core/${folder}/mod.ts`) continue;
      wrong.push(`${file} -> ${target}`);
    }
  }
  assert.deepEqual(
    wrong,
    [],
    "imports that pass a folder's face (a lazy import() may name a file)",
  );
});

Deno.test("core/jail/ is under 3,000 lines, and nothing outside it, tests included, imports more than its mod.ts", async () => {
  const files = await repoFiles();
  const jail = files.filter((f) => f.startsWith("core/jail/") && !f.endsWith("_test.ts"));
  assert.ok(jail.includes("core/jail/mod.ts") && jail.includes("core/jail/namespace.ts"));
  let lines = 0;
  for (const f of jail) lines += (await Deno.readTextFile(`${ROOT}${f}`)).split("\n").length - 1;
  assert.ok(lines < 3000, `core/jail/ holds ${lines} lines`);
  const wrong: string[] = [];
  for (const file of files.filter((f) => /\.ts$/.test(f) && !f.startsWith("core/jail/"))) {
    const specs = _specifiers(await Deno.readTextFile(`${ROOT}${file}`));
    for (const spec of [...specs.static, ...specs.lazy]) {
      const target = relative(ROOT, `${ROOT}${dirname(file)}/${spec}`);
      if (target.startsWith("core/jail/") && target !== "core/jail/mod.ts") {
        wrong.push(`${file} -> ${target}`);
      }
    }
  }
  assert.deepEqual(wrong, []);
});

Deno.test("a program corral starts inside a namespace loads only its own few files: no face, no package", async () => {
  const { SELF_PROGRAMS, WRITTEN_OUT } = await import("../core/base/mod.ts");
  const entries = [
    SELF_PROGRAMS["__applier"],
    SELF_PROGRAMS["__egress-bridge"],
    ...WRITTEN_OUT["egress-preload"],
  ];
  for (const entry of entries) {
    const graph = (await localModuleGraph([`${ROOT}${entry}`])).map((f) => relative(ROOT, f));
    assert.ok(
      graph.includes(entry) && graph.length > 1 || entry.endsWith("egress_forward.ts"),
      entry,
    );
    const faces = graph.filter((f) => f.endsWith("/mod.ts"));
    assert.deepEqual(
      faces,
      [],
      `${entry} loads ${faces.join(", ")}: its namespace binds only its own files`,
    );
    assert.ok(graph.length <= 4, `${entry} loads ${graph.length} files: ${graph.join(", ")}`);
  }
  const packages = (await Promise.all(entries.map((e) => _staticPackages(`${ROOT}${e}`)))).flat();
  assert.deepEqual(packages, [], "npm packages loaded inside a namespace");
});

Deno.test("a process sandbox's runtime imports no node: module (Deno's Node layer: about 5 MiB a sandbox)", async () => {
  // core/guard/_posix_path.ts stands in for node:path; the tool harness loads node:util when
  // it parses a command line. Any node: import starts the Node layer in the sandbox's isolate.
  for (const entry of ["sandbox_child.ts", "sandbox_runtime.ts", "sandbox_worker.ts"]) {
    const { files, builtins } = await _staticGraph(`${ROOT}core/sandbox/${entry}`);
    assert.ok(files.includes("core/tool/harness.ts") || entry === "sandbox_child.ts", entry);
    assert.deepEqual(builtins, [], `core/sandbox/${entry} loads ${builtins.join(", ")}`);
  }
});

Deno.test("code outside tests imports one MCP SDK, v2: @modelcontextprotocol/server and client only", async () => {
  // The v1 SDK (`@modelcontextprotocol/sdk`) stays for tests: tests/ and *_test.ts files. The
  // bench and testing/ speak v2 too; other `@modelcontextprotocol/` packages there are the
  // servers the bench measures (server-filesystem), not an SDK.
  const code = (await repoFiles()).filter((f) =>
    /\.ts$/.test(f) && !/_test\.ts$/.test(f) &&
    /^(core|toolsets|plugins|bench|testing)\/|^main\.ts$/.test(f)
  );
  const wrong: string[] = [];
  let v2 = 0;
  for (const file of code) {
    const text = await Deno.readTextFile(`${ROOT}${file}`);
    for (
      const m of text.matchAll(
        /(?:\bfrom\s*|\bimport\s*\(?\s*|@ts-types=)["'](?:npm:\/?)?(@modelcontextprotocol\/[\w-]+)/g,
      )
    ) {
      if (/^@modelcontextprotocol\/(server|client)$/.test(m[1])) v2++;
      else if (
        /^(core|toolsets|plugins)\/|^main\.ts$/.test(file) || m[1] === "@modelcontextprotocol/sdk"
      ) {
        wrong.push(`${file}: ${m[1]}`);
      }
    }
  }
  assert.ok(v2 > 5, `found ${v2} imports of the v2 SDK`);
  assert.deepEqual(wrong, [], "code outside tests imports the v1 SDK (or another MCP package)");
});

/** Where every command starts, and `deno task install`. */
const _START = ["main.ts", "core/cli/cli.ts", "core/cli/install.ts"];

/** The static graph of each of {@link _START}, by its order. */
function _startGraphs(): Promise<Array<{ files: string[]; packages: string[] }>> {
  return Promise.all(_START.map((e) => _staticGraph(`${ROOT}${e}`)));
}

/** The files every command loads before its own module: the start's static graphs. */
async function _startPath(): Promise<Set<string>> {
  return new Set((await _startGraphs()).flatMap((g) => g.files));
}

Deno.test("every command starts small: before its own module it loads a few of corral's files by name, no face and no package but @noble/hashes", async () => {
  const graphs = await _startGraphs();
  const start = new Set(graphs.flatMap((g) => g.files));
  assert.ok(start.has("core/cli/cli.ts") && start.has("core/cli/host_bundle.ts"));
  const faces = [...start].filter((f) => f.endsWith("/mod.ts"));
  assert.deepEqual(faces, [], "a face on the start path loads its whole folder");
  // 17: core/base/deno_dir.ts, where the host bundle and the jail find Deno's cache alike.
  assert.ok(start.size <= 17, `the start path holds ${start.size} files: ${[...start].join(", ")}`);
  for (const [i, entry] of _START.entries()) {
    const packages = graphs[i].packages.filter((p) => !p.startsWith("@noble"));
    assert.deepEqual(packages, [], `${entry} loads packages before a command runs`);
  }
});
