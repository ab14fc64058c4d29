/**
 * Where corral itself lives: the folder of `main.ts`, `deno.json`, the
 * shipped `permissions.json`, `core/`, `toolsets/` and `plugins/`. Every
 * module that needs one of those paths starts from here.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { existsSync } from "node:fs";
 * import { join } from "node:path";
 * import { CORE_DIR, INSTALL_DIR } from "./install_dir.ts";
 * assert.ok(existsSync(join(INSTALL_DIR, "deno.json")));
 * assert.equal(CORE_DIR, join(INSTALL_DIR, "core"));
 * ```
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { envVar } from "./env_var.ts";

/** corral's install folder (absolute, no trailing slash). */
export const INSTALL_DIR: string = resolve(new URL("../..", import.meta.url).pathname);

/** corral's `core/` folder: what plugins may import besides their own directory. */
export const CORE_DIR: string = join(INSTALL_DIR, "core");

/**
 * The one import specifier of corral's authoring API, from any plugin
 * folder: the package name of corral's `deno.json`, whose `exports` Deno
 * resolves for every module run with corral's config (a sandbox, `corral
 * new`'s tests). `@corral/corral/testing` is the testing entry.
 */
export const AUTHOR_API = "@corral/corral";

/**
 * The files behind {@link AUTHOR_API} and its testing entry (as `exports` of
 * corral's `deno.json` says; tests/architecture_test.ts checks they agree).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AUTHOR_API_FILES, CORE_DIR } from "./install_dir.ts";
 * assert.equal(AUTHOR_API_FILES["@corral/corral"], `${CORE_DIR}/mod.ts`);
 * ```
 */
export const AUTHOR_API_FILES: Readonly<Record<string, string>> = Object.freeze({
  [AUTHOR_API]: join(CORE_DIR, "mod.ts"),
  [`${AUTHOR_API}/testing`]: join(CORE_DIR, "testing.ts"),
});

/**
 * corral's config directory, where the operator keeps `permissions.json`
 * and `corral.json`: `CORRAL_CONFIG_DIR`, else `$XDG_CONFIG_HOME/corral`,
 * else `~/.config/corral`. Part of the trust base: no tool may write it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { configDir } from "./install_dir.ts";
 * assert.ok(configDir().startsWith("/"));
 * ```
 */
export function configDir(): string {
  const explicit = envVar("CORRAL_CONFIG_DIR");
  if (explicit) return resolve(explicit);
  const xdg = envVar("XDG_CONFIG_HOME");
  if (xdg) return join(resolve(xdg), "corral");
  return join(envVar("HOME") || "/root", ".config", "corral");
}

/**
 * corral's code store: private, content-addressed, read-only copies of the
 * plugin files a sandbox imports (the bytes that were pinned), and each
 * module set's own Deno cache (core/sandbox/pinned_code.ts). In corral's
 * cache folder (`CORRAL_CACHE_DIR`, else `$XDG_CACHE_HOME/corral`, else
 * `~/.cache/corral`), or in its config directory when the cache is off
 * (`CORRAL_CACHE_DIR=""`). Part of the trust base, hidden from every tool.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { codeStoreDir } from "./install_dir.ts";
 * assert.ok(codeStoreDir().endsWith("/pinned"));
 * ```
 */
export function codeStoreDir(): string {
  const explicit = envVar("CORRAL_CACHE_DIR");
  if (explicit) return join(resolve(explicit), "pinned");
  if (explicit === "") return join(configDir(), "pinned");
  const xdg = envVar("XDG_CACHE_HOME");
  if (xdg) return join(resolve(xdg), "corral", "pinned");
  return join(envVar("HOME") || "/root", ".cache", "corral", "pinned");
}

/**
 * The folders a sandbox's write layers may live in (core/layers/), preferred
 * first: `CORRAL_LAYERS_DIR`, else `layers` in corral's cache folder; then,
 * for a write root that holds that, `/var/tmp/corral-<uid>/layers` and
 * `/tmp/corral-<uid>/layers`. Part of the trust base and hidden from every
 * sandbox: they hold other sandboxes' writes that are not applied yet.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { layerBases } from "./install_dir.ts";
 * assert.ok(layerBases()[0].endsWith("layers") && layerBases().length === 3);
 * ```
 */
export function layerBases(): string[] {
  const uid = userId() ?? "unknown";
  const explicit = envVar("CORRAL_LAYERS_DIR");
  return [
    explicit ? resolve(explicit) : join(dirname(codeStoreDir()), "layers"),
    `/var/tmp/corral-${uid}/layers`,
    `/tmp/corral-${uid}/layers`,
  ];
}

/**
 * The folders held changes live in (core/layers/held_store.ts), preferred
 * first: `CORRAL_HELD_DIR`, else `corral/held` in the user's state folder
 * (`$XDG_STATE_HOME`, else `~/.local/state`); then, for a write root that
 * holds that, `/var/tmp/corral-<uid>/held`. corral's own state, never the
 * user's tree: part of the trust base and hidden from every sandbox (they
 * hold writes no one has reviewed yet).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { heldBases } from "./install_dir.ts";
 * assert.ok(heldBases().length === 2 && heldBases()[1].endsWith("/held"));
 * ```
 */
export function heldBases(): string[] {
  const explicit = envVar("CORRAL_HELD_DIR");
  const state = envVar("XDG_STATE_HOME");
  const first = explicit
    ? resolve(explicit)
    : state
    ? join(resolve(state), "corral", "held")
    : join(envVar("HOME") || "/root", ".local", "state", "corral", "held");
  return [first, `/var/tmp/corral-${userId() ?? "unknown"}/held`];
}

/**
 * This process's user id, or undefined when the host may not ask
 * (`--allow-sys` without `uid`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { userId } from "./install_dir.ts";
 * assert.ok(userId() === undefined || Number.isInteger(userId()));
 * ```
 */
export function userId(): number | undefined {
  try {
    return Deno.uid() ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `base`, one of corral's own state folders, can be used: made if
 * missing (0700), a folder of this user's own, and private when it lies in
 * a shared place (/tmp, /var/tmp), where another user could have made it
 * first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ownStateDir } from "./install_dir.ts";
 * const dir = `${await Deno.makeTempDir()}/state/held`;
 * assert.ok(ownStateDir(dir));
 * assert.ok(Deno.statSync(dir).isDirectory);
 * ```
 */
export function ownStateDir(base: string): boolean {
  try {
    Deno.mkdirSync(base, { recursive: true, mode: 0o700 });
    const st = Deno.lstatSync(base);
    if (!st.isDirectory || st.uid !== (userId() ?? st.uid)) return false;
    if (/^\/(var\/)?tmp\//.test(base) && (st.mode ?? 0) & 0o077) Deno.chmodSync(base, 0o700);
    return true;
  } catch {
    return false;
  }
}
