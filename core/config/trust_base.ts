/**
 * The trust base: what the next start of corral trusts, so no tool may
 * change it. corral's install folder, its config directory, the policy and
 * config files, Deno's cache, corral's own cache and code store, the audit
 * log, and every plugin directory and package. Secrets among them (the
 * config with its `services` sections, the config directory, the audit log,
 * Deno's cache and the code store, which hold other projects' and plugins'
 * code) may not be read either.
 *
 * A write grant inside one of these paths refuses the start, naming both. A
 * path of the trust base inside a write grant is bound read-only again in
 * the sandbox namespace (core/jail/namespace.ts); a sandbox that runs
 * without the namespace (an explicit opt-out) cannot mask it, so that
 * overlap refuses the start too.
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { denoDir } from "../base/mod.ts";
import { isWithin } from "../jail/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import { codeStoreDir, configDir, heldBases, INSTALL_DIR, layerBases } from "./install_dir.ts";
import { pathExists } from "../base/mod.ts";
import { rotatedPaths } from "../audit/mod.ts";
import { installedCommand } from "./risky_workspace.ts";

/** One protected path and why it is protected. */
export interface TrustedPath {
  path: string;
  /** What it is, for messages: "corral's install folder", "the audit log", … */
  what: string;
  /** Not readable by tools either. */
  secret?: boolean;
}

/** What makes up a trust base. */
export interface TrustBaseOptions {
  /** The policy file in use. */
  policyFile?: string;
  /** Every policy file in effect (its layers: core/config/settings.ts). */
  policyFiles?: string[];
  /** The config file in use. */
  configFile?: string | null;
  /** corral's cache directory. */
  cacheDir?: string | null;
  /** The audit log. */
  auditPath?: string;
  /** Plugin directories and local package paths. */
  plugins?: string[];
  /** The workspace: its project files (`corral.json`, `permissions.json`) are protected. */
  workspace?: string;
  /** corral's config directory (default: `configDir()` now). */
  configDir?: string;
}

/**
 * The project files `corral trust` can make corral use: read-only in every
 * sandbox, whether they exist or not, so no tool can write what the next
 * trusted start would obey (or plant one to be trusted by mistake).
 */
export const PROJECT_FILES = ["corral.json", "permissions.json"] as const;

/**
 * The protected paths (real paths where they exist).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { trustBase } from "./trust_base.ts";
 * import { INSTALL_DIR } from "./install_dir.ts";
 * const t = trustBase({ auditPath: "/var/log/corral.jsonl" });
 * assert.ok(t.some((p) => p.path === INSTALL_DIR));
 * assert.ok(t.find((p) => p.path === "/var/log/corral.jsonl")?.secret === true);
 * ```
 */
export function trustBase(options: TrustBaseOptions = {}): TrustedPath[] {
  // (corral's cache is secret too: it holds what plugins declared, from their config.)
  const list: TrustedPath[] = [
    { path: INSTALL_DIR, what: "corral's install folder" },
    { path: options.configDir ?? configDir(), what: "corral's config directory", secret: true },
    // Deno's cache holds what Deno compiled for every project: no sandbox sees it (each
    // gets its module set's own, from corral's code store, core/sandbox/emit_cache.ts).
    { path: denoDir(), what: "Deno's cache", secret: true },
    { path: codeStoreDir(), what: "corral's code store", secret: true },
    // The next `corral` runs these, wherever `deno install` put them.
    ...installedCommand().map((path) => ({ path, what: "corral's installed command" })),
    // Other sandboxes' writes that are not applied yet (core/layers/).
    ...layerBases().map((path) => ({ path, what: "corral's write layers", secret: true })),
    // Calls' changes held for review (core/layers/held_store.ts): applied only by the operator.
    ...heldBases().map((path) => ({ path, what: "corral's held changes", secret: true })),
  ];
  for (const file of new Set([...options.policyFiles ?? [], options.policyFile ?? "("])) {
    if (!file.startsWith("(")) list.push({ path: file, what: "the policy file" });
  }
  if (options.configFile) {
    list.push({ path: options.configFile, what: "the config file", secret: true });
  }
  if (options.cacheDir) list.push({ path: options.cacheDir, what: "corral's cache", secret: true });
  if (options.auditPath) {
    list.push({ path: options.auditPath, what: "the audit log", secret: true });
    // Its rotated files (core/audit/audit.ts `rotatedPaths`) are the same log (those that exist:
    // a namespace cannot mask a file that is not there).
    for (const p of rotatedPaths(options.auditPath).filter(pathExists)) {
      list.push({ path: p, what: "the audit log (rotated)", secret: true });
    }
  }
  for (const p of options.plugins ?? []) list.push({ path: p, what: "a plugin directory" });
  for (const name of options.workspace ? PROJECT_FILES : []) {
    list.push({ path: join(options.workspace!, name), what: `the project's ${name}` });
  }
  return list.map((t) => ({ ...t, path: _real(resolve(t.path)) }));
}

/**
 * Refuse write grants that overlap the trust base: a write path inside a
 * protected path always; a protected path inside a write path when the
 * sandbox cannot mask it (`masked` false: no namespace). Throws a
 * {@link ConfigError} naming both paths and where the grant comes from.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkWrites, trustBase } from "./trust_base.ts";
 * import { INSTALL_DIR } from "./install_dir.ts";
 * let refused = "";
 * try {
 *   checkWrites([`${INSTALL_DIR}/core`], "toolsets.files", trustBase(), true);
 * } catch (err) {
 *   refused = (err as Error).message;
 * }
 * assert.ok(refused.includes("corral's install folder"));
 * ```
 */
export function checkWrites(
  write: string[],
  where: string,
  trust: TrustedPath[],
  masked: boolean,
): void {
  for (const w of write) {
    for (const t of trust) {
      if (isWithin(w, t.path)) {
        throw new ConfigError(
          `Cannot start: permissions.json ${where}.write "${w}" lies inside ${t.what} ` +
            `"${t.path}", which no tool may change. Grant a folder outside it.`,
        );
      }
      if (!masked && isWithin(t.path, w) && pathExists(t.path)) {
        throw new ConfigError(
          `Cannot start: permissions.json ${where}.write "${w}" holds ${t.what} "${t.path}", ` +
            `and this sandbox runs without the namespace that would keep it read-only ` +
            `(isolation "worker" or "jail": "off"). Grant a narrower folder, or move it out.`,
        );
      }
    }
  }
}

/** The folder a plugin module or local package is protected by. */
export function pluginRoot(module: string): string {
  return dirname(module);
}

function _real(p: string): string {
  try {
    return Deno.realPathSync(p);
  } catch {
    return p;
  }
}
