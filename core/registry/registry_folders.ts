/**
 * The folders a registry keeps for its life (./registry.ts): each made
 * absolute when the registry is made (a relative option means the current
 * folder, then), and the trust base they add to.
 *
 * @module
 */
import { join, resolve } from "node:path";
import {
  codeStoreDir,
  configDir,
  heldBases,
  layerBases,
  ownStateDir,
  type Policy,
  trustBase,
  type TrustedPath,
} from "../config/mod.ts";
import { isWithin } from "../base/mod.ts";
import { filtersDir, SecondWall, type SecondWallOptions } from "../seccomp/mod.ts";
import { serversDir } from "../hosted/mod.ts";
import type { RegistryOptions } from "./_registry_options.ts";

/** What {@link registryFolders} fixed. */
export interface RegistryFolders {
  auditPath?: string;
  /** Where hosted servers are installed. */
  installs: string;
  /** corral's run folder: the sandboxes' egress sockets and `/etc` files. */
  runDir: string;
  /** The hosted servers' approval records. */
  approvals: string;
  /** What no tool may change (and, for secrets, read). */
  trusted: TrustedPath[];
}

/**
 * The folders of a registry made with `options`, fixed now.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parsePolicy } from "../config/mod.ts";
 * import { registryFolders } from "./registry_folders.ts";
 * const policy = parsePolicy("{}", "/p/permissions.json", "/w");
 * const f = registryFolders({ configDir: "/c" }, policy, null, "/w");
 * assert.equal(f.runDir, "/c/run");
 * assert.equal(f.approvals, "/c/servers");
 * assert.ok(f.trusted.some((t) => t.path === "/c" && t.secret));
 * ```
 */
export function registryFolders(
  options: RegistryOptions,
  policy: Policy,
  cacheDir: string | null,
  workspace: string,
): RegistryFolders {
  const auditPath = options.auditPath ? resolve(options.auditPath) : undefined;
  const installs = resolve(options.serversDir ?? serversDir());
  const config = resolve(options.configDir ?? configDir());
  const approvals = resolve(options.approvalsDir ?? join(config, "servers"));
  // corral's own state folders are hidden from every sandbox, also before they hold
  // anything: a mount point cannot be made later inside a read-only grant (of /).
  for (const dir of [...layerBases(), ...heldBases()]) {
    if (!isWithin(dir, workspace) && !isWithin(workspace, dir)) ownStateDir(dir);
  }
  const base = trustBase({
    policyFiles: policy.files,
    cacheDir,
    auditPath,
    workspace,
    configDir: config,
  });
  return {
    ...(auditPath ? { auditPath } : {}),
    installs,
    runDir: join(config, "run"),
    approvals,
    trusted: [
      ...base,
      ...(options.trusted ?? []),
      ...(options.servers?.length ? [{ path: installs, what: "the hosted servers" }] : []),
      ...(options.approvalsDir ? [{ path: approvals, what: "the approvals" }] : []),
    ],
  };
}

/**
 * The second wall of a registry (core/seccomp/wall.ts): the filter without
 * exceptions and one per list of granted syscalls in `policy`, kept beside
 * corral's code store unless `options` names a folder; none without bwrap.
 */
export async function secondWall(
  bwrap: string | undefined,
  policy: Policy,
  options: Partial<SecondWallOptions> = {},
): Promise<SecondWall> {
  if (!bwrap) return SecondWall.none("there is no namespace to load it in");
  return await SecondWall.open(policy.syscallGrants(), {
    ...options,
    dir: options.dir ?? filtersDir(codeStoreDir()),
  });
}
