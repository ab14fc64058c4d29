/**
 * Making the host bundle (./host_bundle.ts): `corral __bundle`, run in the
 * background by a call that found no fresh bundle (or by hand, and by the
 * benchmark before it measures).
 *
 * 1. An entry is written that imports ./cli.ts and the modules of a call
 *    ({@link CALL_MODULES}); `corral mcp`'s ({@link MCP_MODULES}) and the
 *    hosted servers' runtime by a dynamic import, handing them to ./cli.ts
 *    and core/hosted/hosted_runtime.ts: a bundled command holds one
 *    instance of every module it loads.
 * 2. `deno bundle --code-splitting` makes it into a few chunks (esbuild):
 *    the call's (read at start), `corral mcp`'s, the hosted runtime's and
 *    the packages loaded on demand (read when used).
 * 3. Each module's `import.meta.url` in a chunk becomes its own file's URL
 *    (corral finds its install folder, its sandbox entry points and its
 *    programs from there), and a chunk's dynamic import of another chunk is
 *    made computed, so that Deno reads a chunk only when it runs.
 * 4. Every source file it holds (`deno info` of the entry: corral's modules,
 *    `deno.json`, `deno.lock`) is stamped before the build and again after:
 *    a file changed meanwhile discards the build. The chunks go to a folder
 *    of their own in `.corral/bundle/`, then `current.json` names it.
 *
 * @module
 */
import { INSTALL_DIR } from "../config/mod.ts";
import { fileStamp, RACY_MS } from "../base/mod.ts";
import { BUNDLE_VERSION, type BundleRecord } from "./host_bundle.ts";

const _DIR = `${INSTALL_DIR}/.corral/bundle`;
/** Bundles not current for this long are removed by the next build. */
const _KEEP_MS = 24 * 3600_000;

/** Make the host bundle now; 0 when it was made, 1 when not (and why, on stderr). */
export async function buildHostBundle(): Promise<number> {
  const tmp = `${_DIR}/.tmp-${crypto.randomUUID()}`;
  const stamps: Array<[string, string]> = [];
  try {
    await _bundle(tmp, stamps);
    const sandboxes = await sandboxPackages(tmp);
    const name = crypto.randomUUID().slice(0, 12);
    await Deno.rename(`${tmp}/out`, `${_DIR}/${name}`);
    const record: BundleRecord = {
      v: BUNDLE_VERSION,
      deno: Deno.version.deno,
      dir: name,
      // The sandboxes' files too: a toolset that imports another package makes the list stale.
      stamps: [...new Map([...stamps, ...sandboxes.stamps])],
      npm: sandboxes.npm,
    };
    _put(`${_DIR}/current.json`, JSON.stringify(record));
    await Deno.remove(`${_DIR}/failed.json`).catch(() => {});
    await _prune(name);
    return 0;
  } catch (err) {
    console.error(`corral: no host bundle: ${(err as Error).message}`);
    _put(
      `${_DIR}/failed.json`,
      JSON.stringify({
        v: BUNDLE_VERSION,
        deno: Deno.version.deno,
        dir: "",
        stamps,
        npm: [],
        at: Date.now(),
      }),
    );
    return 1;
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    await Deno.remove(`${_DIR}/build.lock`).catch(() => {});
  }
}

/**
 * `deno bundle` of the entry into `tmp`/out, its chunks placed; `stamps`
 * gets the stamp of every source file, read before the bundle, and the
 * bundle is refused when one changed meanwhile.
 */
async function _bundle(tmp: string, stamps: Array<[string, string]>): Promise<void> {
  await Deno.mkdir(tmp, { recursive: true });
  const entry = `${tmp}/entry.ts`;
  await Deno.writeTextFile(entry, await _entryText());
  const files = [
    ...await _sources(entry),
    `${INSTALL_DIR}/deno.json`,
    `${INSTALL_DIR}/deno.lock`,
  ];
  stamps.push(...await _stamped(files));
  await _deno([
    "bundle",
    "--platform",
    "deno",
    "--code-splitting",
    "--outdir",
    `${tmp}/out`,
    `--config=${INSTALL_DIR}/deno.json`,
    entry,
  ]);
  for await (const e of Deno.readDir(`${tmp}/out`)) {
    if (!e.name.endsWith(".js")) continue;
    if (e.name !== "entry.js" && /^entry/.test(e.name)) throw new Error(`unexpected ${e.name}`);
    const file = `${tmp}/out/${e.name}`;
    await Deno.writeTextFile(file, placeChunk(await Deno.readTextFile(file), INSTALL_DIR));
  }
  if (!stamps.every(([f, s]) => fileStamp(f) === s)) {
    throw new Error("a source file changed while the bundle was made");
  }
}

/**
 * The modules ./cli.ts loads (by `_load`) on the way of a `corral call`:
 * bundled with it, statically. Any command but these two runs from corral's
 * modules.
 */
export const CALL_MODULES = [
  "./prestart_recipe.ts",
  "./_open_registry.ts",
  "./_call_command.ts",
  "../sandbox/prestart.ts",
] as const;

/**
 * The modules ./cli.ts loads on the way of `corral mcp`: bundled too, in a
 * chunk of their own that only `corral mcp` reads (a call does not).
 */
export const MCP_MODULES = ["./_mcp_command.ts"] as const;

/**
 * The entry: ./cli.ts and the modules of a call, statically (one chunk, read
 * at start), handed to ./cli.ts's `_load`; the hosted servers' runtime by a
 * dynamic import (a chunk of its own, read only when a server starts).
 */
async function _entryText(): Promise<string> {
  const url = (rel: string) => JSON.stringify(`file://${INSTALL_DIR}/${rel}`);
  const cli = await Deno.readTextFile(`${INSTALL_DIR}/core/cli/cli.ts`);
  const loaded = new Set([...cli.matchAll(/_load<typeof import\("([^"]+)"\)>/g)].map((m) => m[1]));
  const lost = [...CALL_MODULES, ...MCP_MODULES].filter((p) => !loaded.has(p));
  if (lost.length) throw new Error(`core/cli/cli.ts no longer loads ${lost.join(", ")}`);
  const rel = (p: string) => new URL(p, "file:///core/cli/").pathname.slice(1);
  return [
    `import * as cli from ${url("core/cli/cli.ts")};`,
    ...CALL_MODULES.map((p, i) => `import * as m${i} from ${url(rel(p))};`),
    `import { useBundledServer } from ${url("core/hosted/hosted_runtime.ts")};`,
    `import { parseCli } from ${url("core/cli/_options.ts")};`,
    `cli.useBundled({`,
    ...CALL_MODULES.map((p, i) => `  ${JSON.stringify(p)}: () => Promise.resolve(m${i}),`),
    ...MCP_MODULES.map((p) => `  ${JSON.stringify(p)}: () => ${_IMPORT}(${url(rel(p))}),`),
    `});`,
    `useBundledServer(() => ${_IMPORT}(${url("core/hosted/hosted_server.ts")}));`,
    `export const main = cli.main;`,
    `/** The command of argv, as ./cli.ts reads it (undefined when it does not parse). */`,
    `export function commandOf(argv: string[]): string | undefined {`,
    `  try {`,
    `    return parseCli(argv).positionals[0];`,
    `  } catch {`,
    `    return undefined;`,
    `  }`,
    `}`,
    "",
  ].join("\n");
}

/**
 * The npm packages (name, version) that corral's sandboxes load: the static
 * graph of the sandbox entries and the built-in toolsets, with every
 * package those depend on. A sandbox runs `--cached-only`, and a host that
 * runs from the bundle never fills the Deno cache as one running from the
 * modules does, so ./host_bundle.ts uses a bundle only where they are cached.
 * With the stamps of every file of that graph: the list holds while they do.
 */
async function sandboxPackages(
  tmp: string,
): Promise<{ npm: Array<[string, string]>; stamps: Array<[string, string]> }> {
  const roots = ["sandbox_child.ts", "sandbox_worker.ts"].map((f) =>
    `${INSTALL_DIR}/core/sandbox/${f}`
  );
  for await (const set of Deno.readDir(`${INSTALL_DIR}/toolsets`)) {
    if (!set.isDirectory) continue;
    for await (const e of Deno.readDir(`${INSTALL_DIR}/toolsets/${set.name}`)) {
      if (/\.ts$/.test(e.name) && !/_test\.ts$/.test(e.name)) {
        roots.push(`${INSTALL_DIR}/toolsets/${set.name}/${e.name}`);
      }
    }
  }
  const entry = `${tmp}/sandboxes.ts`;
  await Deno.writeTextFile(entry, roots.map((r) => `import "file://${r}";\n`).join(""));
  const before = await _stamped(roots);
  const info = JSON.parse(
    await _deno(["info", "--json", `--config=${INSTALL_DIR}/deno.json`, entry]),
  ) as _Info;
  const files = info.modules.map((m) => m.specifier)
    .filter((s) => s.startsWith(`file://${INSTALL_DIR}/`) && !s.startsWith(`file://${_DIR}/`))
    .map((s) => decodeURIComponent(new URL(s).pathname));
  const stamps = await _stamped([...new Set([...roots, ...files])]);
  const now = new Map(stamps);
  if (!before.every(([f, st]) => now.get(f) === st)) {
    throw new Error("a sandbox's file changed while the bundle was made");
  }
  return { npm: _reachedPackages(info), stamps };
}

interface _Info {
  roots: string[];
  redirects?: Record<string, string>;
  modules: Array<{
    specifier: string;
    dependencies?: Array<{ code?: { specifier?: string }; isDynamic?: boolean }>;
  }>;
  npmPackages?: Record<string, { name: string; version: string; dependencies?: string[] }>;
}

/** The npm packages `info`'s roots reach (static and literal dynamic imports), with their own. */
function _reachedPackages(info: _Info): Array<[string, string]> {
  const bySpec = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>(info.roots);
  const queue = [...info.roots];
  const keys: string[] = [];
  while (queue.length) {
    for (const dep of bySpec.get(queue.pop()!)?.dependencies ?? []) {
      const raw = dep.code?.specifier;
      if (!raw) continue;
      const spec = info.redirects?.[raw] ?? raw;
      if (seen.has(spec)) continue;
      seen.add(spec);
      if (spec.startsWith("npm:/")) {
        keys.push(spec.slice(5).split("/").slice(0, spec[5] === "@" ? 2 : 1).join("/"));
      } else queue.push(spec);
    }
  }
  // A package's key may carry its peers (`name@version_peer@version`): found by name@version too.
  const byId = new Map<string, string>();
  for (const [key, p] of Object.entries(info.npmPackages ?? {})) {
    byId.set(`${p.name}@${p.version}`, key);
  }
  const out = new Map<string, [string, string]>();
  for (let id = keys.pop(); id !== undefined; id = keys.pop()) {
    const key = info.npmPackages?.[id] ? id : byId.get(id) ?? id;
    const p = info.npmPackages?.[key];
    if (!p || out.has(key)) continue;
    out.set(key, [p.name, p.version]);
    keys.push(...(p.dependencies ?? []));
  }
  return [...out.values()].sort();
}

/** The local files of the entry's module graph (static and literal dynamic imports). */
async function _sources(entry: string): Promise<string[]> {
  const info = JSON.parse(
    await _deno(["info", "--json", `--config=${INSTALL_DIR}/deno.json`, entry]),
  );
  const files = (info.modules as Array<{ specifier: string }>)
    .map((m) => m.specifier)
    .filter((s) => s.startsWith(`file://${INSTALL_DIR}/`) && !s.startsWith(`file://${_DIR}/`))
    .map((s) => decodeURIComponent(new URL(s).pathname));
  if (files.length < 50) throw new Error(`deno info found ${files.length} of corral's modules`);
  return files;
}

/** Each file's stamp (waiting out files changed within the last 3 s); throws for a missing one. */
async function _stamped(files: string[]): Promise<Array<[string, string]>> {
  let out = files.map((f) => [f, fileStamp(f)] as const);
  if (out.some(([, s]) => s === undefined)) {
    await new Promise((r) => setTimeout(r, RACY_MS));
    out = files.map((f) => [f, fileStamp(f)] as const);
  }
  const missing = out.find(([, s]) => s === undefined);
  if (missing) throw new Error(`cannot stamp ${missing[0]}`);
  return out as Array<[string, string]>;
}

/**
 * A chunk as it runs from the bundle folder: within each module's part
 * (esbuild heads it `// <path from the install folder>`), `import.meta.url`
 * is that module's own file URL; a dynamic import of another chunk is
 * computed, so that Deno does not read every chunk at start.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { placeChunk } from "./bundle_build.ts";
 * const chunk = "// core/a.ts\nconst u = import.meta.url;\nawait import(\"./b-X1.js\");\n";
 * const out = placeChunk(chunk, "/opt/corral");
 * assert.ok(out.includes('const u = "file:///opt/corral/core/a.ts";'));
 * assert.ok(out.includes('import(new URL("./b-X1.js", import.meta.url).href)'));
 * ```
 */
export function placeChunk(text: string, install: string): string {
  const parts = text.split(/^(?=\/\/ \S+\.[cm]?[jt]sx?$)/m);
  const placed = parts.map((part) => {
    const head = /^\/\/ (\S+)\n/.exec(part)?.[1];
    // Outside any module (esbuild's own helpers: createRequire for node's builtins) it stays.
    if (!head || !part.includes(_META_URL)) return part;
    const file = new URL(head, `file://${install}/`).href;
    return part.replaceAll(_META_URL, JSON.stringify(file));
  }).join("");
  return placed.replace(
    /\bimport\("(\.\/[\w.-]+\.js)"\)/g,
    (_m, chunk) => `${_IMPORT}(new URL(${JSON.stringify(chunk)}, ${_META_URL}).href)`,
  );
}

/**
 * Spelled apart: this module's own text is left alone in a chunk, and holds
 * no dynamic import (tests/e2e/cli/compile_includes_test.ts reads every one).
 */
const _META_URL = ["import", "meta", "url"].join(".");
const _IMPORT = "import";

/** Run `deno ARGS` in the install folder; its stdout, or an Error with its last words. */
async function _deno(args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: INSTALL_DIR,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  if (!out.success) {
    throw new Error(
      `deno ${args[0]}: ${text.decode(out.stderr).trim().split("\n").slice(-3).join(" ")}`,
    );
  }
  return text.decode(out.stdout);
}

/** Written whole or not at all. */
function _put(path: string, text: string): void {
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  Deno.writeTextFileSync(tmp, text);
  Deno.renameSync(tmp, path);
}

/** Remove other bundles (and dead builds) untouched for a day: a running corral may use a recent one. */
async function _prune(current: string): Promise<void> {
  for await (const e of Deno.readDir(_DIR)) {
    if (!e.isDirectory || e.name === current) continue;
    const at = (await Deno.stat(`${_DIR}/${e.name}`).catch(() => undefined))?.mtime?.getTime();
    if (at !== undefined && Date.now() - at > _KEEP_MS) {
      await Deno.remove(`${_DIR}/${e.name}`, { recursive: true }).catch(() => {});
    }
  }
}
