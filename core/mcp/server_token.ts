/**
 * The HTTP server's bearer token when the operator gives none: made once,
 * kept in corral's config directory (`mcp-token`, mode 0600, out of every
 * tool's reach: the config directory is hidden in the sandbox namespace),
 * and read again by later starts and by other instances of the same user.
 *
 * @module
 */
import { join } from "node:path";
import { configDir } from "../config/mod.ts";
import { ownedFileProblem } from "../base/mod.ts";

/**
 * The token in `dir/mcp-token` (or `dir/NAME`, e.g. `metrics-token`), made
 * when missing (32 random bytes, hex).
 * A file that others may read, or that another user owns (they could put
 * their own token in it, and be the operator), is refused: its token is replaced.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serverToken } from "./server_token.ts";
 * const dir = await Deno.makeTempDir();
 * const a = await serverToken(dir);
 * const b = await serverToken(dir);
 * assert.ok(a.created && !b.created && a.token === b.token && a.token.length === 64);
 * assert.ok(((await Deno.stat(a.file)).mode! & 0o077) === 0);
 * ```
 */
export async function serverToken(
  dir: string = configDir(),
  name = "mcp-token",
): Promise<{ token: string; file: string; created: boolean }> {
  const file = join(dir, name);
  try {
    const st = await Deno.stat(file);
    const token = (await Deno.readTextFile(file)).trim();
    const problem = ownedFileProblem(file, st, { what: name, secret: true, rootOwned: false });
    if (!problem && /^[0-9a-f]{32,}$/.test(token)) {
      return { token, file, created: false };
    }
  } catch { /* none yet */ }
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const token = Array.from(
    crypto.getRandomValues(new Uint8Array(32)),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
  const tmp = `${file}.${crypto.randomUUID()}.tmp`;
  await Deno.writeTextFile(tmp, token + "\n", { mode: 0o600 });
  await Deno.chmod(tmp, 0o600);
  await Deno.rename(tmp, file);
  return { token, file, created: true };
}
