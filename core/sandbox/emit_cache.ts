/**
 * Deno's emit cache for the sandbox namespace. Inside the namespace Deno's
 * cache is read-only, and a TypeScript module whose JavaScript is not in it
 * costs about 175 ms per start (Deno retries the write). So before a
 * namespaced sandbox starts, the host fills the cache for its modules with
 * `deno install --entrypoint --cached-only --frozen`: that emits the
 * JavaScript, executes nothing and downloads nothing. Files whose emit is
 * already there and newer than the source are skipped.
 *
 * @module
 */
import { join } from "node:path";
import { INSTALL_DIR } from "../config/install_dir.ts";

const _TRANSPILED = /\.(ts|tsx|mts|cts|jsx)$/;
const _done = new Map<string, number>();

/**
 * Make sure Deno's cache holds the emitted JavaScript of `files` (absolute
 * paths). Never throws: a module that cannot be emitted fails later, in
 * its sandbox, with Deno's own message.
 *
 * @example
 * ```ts ignore
 * import { warmEmitCache } from "./emit_cache.ts";
 * await warmEmitCache(["/srv/plugins/weather.ts"], "/root/.cache/deno");
 * ```
 */
export async function warmEmitCache(files: string[], denoDir: string): Promise<void> {
  const cold: string[] = [];
  for (const f of new Set(files)) {
    if (!_TRANSPILED.test(f)) continue;
    let source: number;
    try {
      source = Deno.statSync(f).mtime?.getTime() ?? 0;
    } catch {
      continue;
    }
    if (_done.get(f) === source) continue;
    try {
      const emitted = Deno.statSync(join(denoDir, "gen", "file", `${f}.js`)).mtime?.getTime() ?? 0;
      if (emitted >= source) {
        _done.set(f, source);
        continue;
      }
    } catch { /* not emitted yet */ }
    cold.push(f);
    _done.set(f, source);
  }
  if (cold.length === 0) return;
  try {
    await new Deno.Command(Deno.execPath(), {
      args: [
        "install",
        "--entrypoint",
        "--cached-only",
        "--frozen",
        `--config=${join(INSTALL_DIR, "deno.json")}`,
        ...cold,
      ],
      cwd: INSTALL_DIR,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
  } catch { /* the sandbox reports the real error */ }
  // Deno keeps an emit whose source text is unchanged (a checkout that only
  // touched the file): mark it current, so the next start skips the install.
  const now = new Date();
  for (const f of cold) {
    try {
      Deno.utimeSync(join(denoDir, "gen", "file", `${f}.js`), now, now);
    } catch { /* not emitted: the sandbox reports why */ }
  }
}
