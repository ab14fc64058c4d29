// Helpers of the end-to-end tests alone (what the bench shares with them: testing/mod.ts).
import { CORRAL_FLAGS, ROOT, tempDir } from "../testing/mod.ts";

// Only for core/identity/redis_state_test.ts, which still imports it from here: testing/mod.ts.
export { freePort } from "../testing/mod.ts";

/**
 * A temp folder with `ws/` (the workspace) and `outside/` beside it, removed
 * when the test file ends (testing/temp_dir.ts): a process a test leaves
 * running may use it until then.
 */
export async function tempLayout(): Promise<{ base: string; ws: string; outside: string }> {
  const base = await tempDir("corral_test_");
  await Deno.mkdir(`${base}/ws`);
  await Deno.mkdir(`${base}/outside`);
  return { base, ws: `${base}/ws`, outside: `${base}/outside` };
}

/** Run corral's CLI as a child process. */
export async function runCli(
  args: string[],
  options: { cwd?: string; stdin?: string; flags?: string[]; env?: Record<string, string> } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const flags = options.flags ?? CORRAL_FLAGS;
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
  return _scratch ??= await tempDir("corral_test_cwd_");
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
