/**
 * Workspaces that would put the user's own machine in a tool's reach: HOME,
 * `/` or a folder above HOME (every rc file, every project, `~/.local/bin`),
 * a folder that holds corral's installed command, its config or its cache
 * (the next `corral` would run what a tool wrote), and a folder on PATH (the
 * next command of that name would). corral refuses them unless the operator
 * passes {@link UNSAFE_WORKSPACE_FLAG}; even then the installed command and
 * corral's folders stay in the trust base, and no change inside a folder on
 * PATH is applied (core/layers/change_rules.ts).
 *
 * @module
 */
import { dirname, isAbsolute, join, resolve } from "node:path";
import { isWithin } from "../base/mod.ts";
import { envVar } from "./env_var.ts";
import { codeStoreDir, configDir } from "./install_dir.ts";

/** The flag that accepts a risky workspace. */
export const UNSAFE_WORKSPACE_FLAG = "--unsafe-workspace";

/**
 * The installed `corral` command and its config folder (`deno install`
 * puts `corral` and `.corral/` in `<root>/bin`, the root being
 * `DENO_INSTALL_ROOT` or `~/.deno`), and any `corral` found on PATH with its
 * `.corral/`: part of the trust base wherever they are.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { installedCommand } from "./risky_workspace.ts";
 * assert.ok(installedCommand().some((p) => p.endsWith("/bin/corral")));
 * ```
 */
export function installedCommand(): string[] {
  const root = envVar("DENO_INSTALL_ROOT") || join(envVar("HOME") || "/root", ".deno");
  const bins = new Set([join(resolve(root), "bin")]);
  for (const d of (envVar("PATH") ?? "").split(":")) {
    if (!isAbsolute(d)) continue;
    try {
      if (Deno.statSync(join(d, "corral")).isFile) bins.add(resolve(d));
    } catch { /* no corral there */ }
  }
  return [...bins].flatMap((b) => [join(b, "corral"), join(b, ".corral")]);
}

/**
 * Why `workspace` (a real path) is refused, or undefined when it is fine.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { riskyWorkspace } from "./risky_workspace.ts";
 * assert.match(riskyWorkspace("/")!, /the root folder/);
 * const ws = await Deno.realPath(await Deno.makeTempDir());
 * assert.equal(riskyWorkspace(ws), undefined);
 * ```
 */
export function riskyWorkspace(workspace: string): string | undefined {
  if (workspace === "/") return "the root folder";
  const home = _real(envVar("HOME"));
  if (home && workspace === home) return `your home folder (${home})`;
  if (home && isWithin(home, workspace)) return `a folder above your home folder (${home})`;
  // (A config or cache folder the operator placed with CORRAL_CONFIG_DIR / CORRAL_CACHE_DIR
  // is theirs to place: it stays in the trust base wherever it is.)
  const held: Array<[string, string]> = installedCommand().map((p) => [
    p,
    "corral's installed command",
  ]);
  if (!envVar("CORRAL_CONFIG_DIR")) held.push([configDir(), "corral's config folder"]);
  if (envVar("CORRAL_CACHE_DIR") === undefined) {
    held.push([dirname(codeStoreDir()), "corral's cache"]);
  }
  for (const [p, what] of held) {
    const real = _real(p) ?? p;
    if (isWithin(real, workspace)) return `a folder holding ${what} (${real})`;
  }
  for (const d of (envVar("PATH") ?? "").split(":")) {
    if (!isAbsolute(d)) continue;
    const real = _real(d) ?? resolve(d);
    if (isWithin(workspace, real)) return `a folder on your PATH (${real})`;
  }
  return undefined;
}

/** The refusal of a risky workspace, naming the flag that accepts it. */
export function riskyWorkspaceError(workspace: string, why: string): string {
  return `the workspace ${workspace} is ${why}: a tool that writes there could change what ` +
    `runs outside the sandbox. Run corral from a project's folder, pass --workspace DIR, or ` +
    `accept it explicitly with ${UNSAFE_WORKSPACE_FLAG}`;
}

function _real(p: string | undefined): string | undefined {
  if (!p) return undefined;
  try {
    return Deno.realPathSync(p);
  } catch {
    return resolve(p);
  }
}
