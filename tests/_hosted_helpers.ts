// Shared helpers of the hosted-server tests: a registry hosting servers from
// a corral.json text, with a private config directory (approvals) and the
// real npm servers installed in the project's .corral/servers.
import { join } from "node:path";
import { parseConfig } from "../core/config/corral_config.ts";
import { parsePolicy } from "../core/config/policy.ts";
import type { ServerEntry } from "../core/config/server_config.ts";
import { installServer } from "../core/hosted/install.ts";
import { serverLetters } from "../core/hosted/hosted_servers.ts";
import { Registry } from "../core/registry/registry.ts";
import { effectiveGrant } from "../core/sandbox/grant.ts";
import { Reporter } from "../core/tool/reporter.ts";
import { CORRAL_ARGS, HOSTED_FIXTURES, removeTree, ROOT, tempDir } from "../testing/mod.ts";

/** Where `.ci/run` (deno task install-servers) installs the real servers. */
export const SERVERS_DIR = join(ROOT, ".corral", "servers");
Deno.env.set("CORRAL_SERVERS_DIR", SERVERS_DIR);

/** The real npm servers (tests/fixtures/hosted/servers.json). */
export async function realServers(): Promise<ServerEntry[]> {
  const text = await Deno.readTextFile(join(HOSTED_FIXTURES, "servers.json"));
  return parseConfig(text, join(HOSTED_FIXTURES, "servers.json")).servers;
}

/** A temp base with `ws/`, `outside/` (a canary) and `config/` (approvals). */
export interface HostedLayout {
  base: string;
  ws: string;
  outside: string;
  config: string;
  audit: string;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Make a {@link HostedLayout}; dispose it to remove it (else it goes when the
 * test file ends, testing/temp_dir.ts). Its `config` is passed to what runs
 * corral (never set in this process's environment: test files running in
 * parallel share one process, and one file's folder would be another's).
 */
export async function hostedLayout(): Promise<HostedLayout> {
  const base = await tempDir("corral_test_hosted_");
  for (const d of ["ws", "outside", "config"]) await Deno.mkdir(join(base, d));
  await Deno.writeTextFile(join(base, "outside", "canary.txt"), "CANARY-SECRET\n");
  return {
    base,
    ws: join(base, "ws"),
    outside: join(base, "outside"),
    config: join(base, "config"),
    audit: join(base, "audit.jsonl"),
    [Symbol.asyncDispose]() {
      try {
        removeTree(base);
      } catch { /* tried again when the test file ends */ }
      return Promise.resolve();
    },
  };
}

/** A registry hosting `servers` (corral.json text) under `permissions` (permissions.json "servers"). */
export async function hostedRegistry(
  layout: HostedLayout,
  servers: Record<string, unknown>,
  permissions: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  options: { bwrap?: null; serversDir?: string; seccomp?: { dir?: string; python?: string } } = {},
): Promise<{ registry: Registry; lines: string[] }> {
  const config = parseConfig(JSON.stringify({ servers }), join(layout.base, "corral.json"));
  for (const e of config.servers) await installServer(e, options.serversDir);
  const policy = parsePolicy(
    JSON.stringify({ servers: permissions, ...extra }),
    join(layout.base, "permissions.json"),
    layout.ws,
  );
  const lines: string[] = [];
  const registry = await Registry.create({
    workspace: layout.ws,
    policy,
    noBuiltins: true,
    cacheDir: null,
    auditPath: layout.audit,
    reporter: new Reporter({ sink: (t) => lines.push(t), color: false }),
    servers: config.servers,
    // Explicit: test files run in parallel in one process and share its environment.
    configDir: layout.config,
    approvalsDir: join(layout.config, "servers"),
    ...options,
  });
  return { registry, lines };
}

/** Start `name` once and approve what it lists (what `corral servers install` does). */
export async function approve(registry: Registry, name: string): Promise<string[]> {
  const policy = registry.policy.server(name);
  const grant = effectiveGrant(serverLetters(policy), policy, registry.host).grant;
  return await registry.hosted.approve(name, policy, grant);
}

/** The audit lines of `kind: "server"` (refusals and lifecycle events). */
export async function serverEvents(layout: HostedLayout): Promise<Array<Record<string, string>>> {
  let text = "";
  try {
    text = await Deno.readTextFile(layout.audit);
  } catch { /* none yet */ }
  return text.split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((r) =>
    r.kind === "server"
  );
}

/**
 * How to start `corral mcp` over stdio on a {@link HostedLayout}: its
 * workspace, the `corral.json` and `permissions.json` in its base, its audit
 * log and config folder, the installed servers, no code cache.
 */
export function hostedMcpSpawn(l: HostedLayout) {
  return {
    command: Deno.execPath(),
    args: [
      ...CORRAL_ARGS,
      "mcp",
      ...["--workspace", l.ws, "--config", join(l.base, "corral.json")],
      ...["--permissions", join(l.base, "permissions.json"), "--audit", l.audit],
    ],
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: Deno.env.get("HOME") ?? "/root",
      NO_COLOR: "1",
      CORRAL_CACHE_DIR: "",
      CORRAL_CONFIG_DIR: l.config,
      CORRAL_SERVERS_DIR: SERVERS_DIR,
      // The SDK's transport starts the child with this environment only: a run whose packages
      // are in another Deno cache (DENO_DIR) must find them there, not fetch them again.
      ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
    },
    cwd: ROOT,
    stderr: "pipe" as const,
  };
}
