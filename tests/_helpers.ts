// Shared helpers of the end-to-end tests.
import { HOST_FLAGS } from "../core/sandbox/host_flags.ts";
import { Reporter } from "../core/tool/reporter.ts";
import { Registry } from "../core/registry/registry.ts";
import type { RegistryOptions } from "../core/registry/registry_options.ts";
import { parsePolicy } from "../core/config/policy.ts";

export const ROOT = new URL("..", import.meta.url).pathname;
export const FIXTURES = new URL("./fixtures/", import.meta.url).pathname;

/** A temp folder with `ws/` (the workspace) and `outside/` beside it. */
export async function tempLayout(): Promise<{ base: string; ws: string; outside: string }> {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_test_" }));
  await Deno.mkdir(`${base}/ws`);
  await Deno.mkdir(`${base}/outside`);
  return { base, ws: `${base}/ws`, outside: `${base}/outside` };
}

/**
 * A registry over fixture modules only, with `policy` as toolset "fixture";
 * `options` adds registry options (an audit log, say).
 */
export async function fixtureRegistry(
  modules: string[],
  toolsetPolicy: Record<string, unknown>,
  workspace: string,
  extra: Record<string, unknown> = {},
  options: Partial<RegistryOptions> = {},
): Promise<{ registry: Registry; lines: string[] }> {
  const lines: string[] = [];
  const policy = parsePolicy(
    JSON.stringify({ toolsets: { fixture: toolsetPolicy }, ...extra }),
    "test-permissions.json",
    workspace,
  );
  const registry = await Registry.create({
    workspace,
    policy,
    noBuiltins: true,
    cacheDir: null,
    reporter: new Reporter({ sink: (t) => lines.push(t), color: false }),
    sources: [{
      id: "fixture",
      kind: "builtin",
      modules: modules.map((m) => m.startsWith("/") ? m : `${FIXTURES}${m}`),
      policy: policy.toolset("fixture"),
    }],
    ...options,
  });
  return { registry, lines };
}

/** Run corral's CLI as a child process. */
export async function runCli(
  args: string[],
  options: { cwd?: string; stdin?: string; flags?: string[]; env?: Record<string, string> } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const flags = options.flags ??
    [...HOST_FLAGS];
  const cmd = new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, `${ROOT}main.ts`, ...args],
    // Never corral's own folder: that is no workspace (see docs/security.md).
    cwd: options.cwd ?? await _scratchCwd(),
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: {
      NO_COLOR: "1",
      CORRAL_CACHE_DIR: "",
      // The developer's own config directory never leaks into a test.
      CORRAL_CONFIG_DIR: `${await _scratchCwd()}/.no-config`,
      ...options.env,
    },
  });
  const child = cmd.spawn();
  if (options.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(options.stdin));
    await w.close();
  }
  const out = await child.output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

let _scratch: string | undefined;
/** An empty folder to run the CLI from when a test names none. */
async function _scratchCwd(): Promise<string> {
  return _scratch ??= await Deno.realPath(await Deno.makeTempDir({ prefix: "corral_cwd_" }));
}

/** A free TCP port on 127.0.0.1 (released again: the test binds it right after). */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** The first of `paths` that is a file (a system program the test runs), else undefined. */
export function firstFile(paths: string[]): string | undefined {
  return paths.find((p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  });
}

/** Wait until a sandbox's write layer under `base` holds `name` with `text` in it. */
export async function waitInLayer(base: string, name: string, text: string): Promise<void> {
  // Each file on its own: another sandbox's folder (a test running beside) ends no look.
  const holds = (f: string) => {
    try {
      return Deno.readTextFileSync(f).includes(text);
    } catch {
      return false;
    }
  };
  const list = (dir: string) => {
    try {
      return [...Deno.readDirSync(dir)].map((e) => `${dir}/${e.name}`);
    } catch {
      return [];
    }
  };
  for (let i = 0; i < 600; i++) {
    for (const sandbox of list(`${base}/sandboxes`)) {
      if (list(sandbox).some((root) => holds(`${root}/u/${name}`))) return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no layer under ${base} holds ${name} with ${text}`);
}
