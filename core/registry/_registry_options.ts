/**
 * The options of a registry (./registry.ts, `Registry.create`).
 *
 * @module
 */
import type { Policy, ServerEntry, TrustedPath } from "../config/mod.ts";
import type { AuditLogOptions } from "../audit/mod.ts";
import type { HostPrivileges } from "../sandbox/mod.ts";
import type { Reporter } from "../tool/mod.ts";
import type { SecondWallOptions } from "../seccomp/mod.ts";
import type { DiscoveryCache } from "./discovery_cache.ts";
import type { ToolsetSource } from "./catalog.ts";
import type { NotLoaded } from "./not_loaded.ts";
import type { SandboxPoolLimits } from "./sandbox_pool.ts";

/** Options of {@link Registry.create}. */
export interface RegistryOptions {
  /** The workspace (default: the current directory). */
  workspace?: string;
  /** A loaded policy, or the path of permissions.json. */
  policy?: Policy;
  policyFile?: string;
  /** Letters the host grants (`-r -w -x -n`); default all. */
  privileges?: string;
  /** Override how Deno's own grants are queried (tests). */
  host?: HostPrivileges;
  /**
   * corral's config directory for this registry's life: hidden from every
   * tool, its `run` folder holds the sandboxes' egress sockets and `/etc`
   * files (default: `configDir()` of core/config/install_dir.ts, at creation).
   */
  configDir?: string;
  /** Where hosted servers' approval records live (default: `<config dir>/servers` at creation). */
  approvalsDir?: string;
  /** Where hosted servers are installed (default: `serversDir()` of core/hosted/install.ts, at creation). */
  serversDir?: string;
  /** On-demand toolsets to load besides the autoloaded ones. */
  toolsets?: string[];
  /** Load no built-in toolset at all (plugin tests). */
  noBuiltins?: boolean;
  /** Extra sources (file-drop plugins, packages), loaded after the built-ins in order. */
  sources?: ToolsetSource[];
  /** Discovery cache directory; `null` disables the cache. */
  cacheDir?: string | null;
  /** Where host warnings and reports go (default stderr). */
  reporter?: Reporter;
  /** Append one JSON line per call to this file (see core/audit/audit.ts). */
  auditPath?: string;
  /** Run calls even when the audit log cannot be written (default: refuse them). */
  auditOptional?: boolean;
  /**
   * The audit log's bounds: its total with its rotated files (default 1 GiB;
   * 0: never rotate), the window refusals are counted over (default 60 s).
   */
  auditLimits?: AuditLogOptions;
  /** The bwrap binary of the sandbox namespace; `null`: none (tests). Default: detected. */
  bwrap?: string | null;
  /**
   * Where the jail's syscall filters are kept and which Python compiles them
   * (default: `seccomp` beside corral's code store, `/usr/bin/python3`).
   */
  seccomp?: Partial<SecondWallOptions>;
  /**
   * More paths of the trust base (core/config/trust_base.ts): the config
   * file, plugin directories. The policy file, the cache, the audit log and
   * the plugin sources' folders are added by the registry itself.
   */
  trusted?: TrustedPath[];
  /** Built-in tool names reserved for their toolsets (default: every built-in's). */
  reserved?: Map<string, string>;
  /** Do not print each load problem (they stay in `problems`). */
  quietProblems?: boolean;
  /** Do not print warnings (they stay in `warnings`): `corral call` prints its tool's. */
  quietWarnings?: boolean;
  /** Warnings already printed in this start (shared by its registries): each once. */
  said?: Set<string>;
  /** Plugin files rejected before discovery (./not_loaded.ts): a call of a name they may define says why. */
  rejected?: NotLoaded[];
  /** A progress line on stderr, when it is a terminal, for a discovery that takes long. */
  discoveryProgress?: boolean;
  /** The discovery cache, when the caller already opened it (else opened from `cacheDir`). */
  discoveryCache?: DiscoveryCache;
  /** Hosted MCP servers (corral.json `servers`), registered after the plugins. */
  servers?: ServerEntry[];
  /** Call sandboxes alive at once (every principal's) and how long an unused one is kept. */
  sandboxLimits?: SandboxPoolLimits;
  /** Hold every call's changes for review instead of applying them (`--hold`). */
  hold?: boolean;
}
