/**
 * The team side of `corral mcp --http`: identities from corral.json, a
 * registry (and so sandboxes) for each identity workspace other than the
 * server's, the metrics token (`CORRAL_METRICS_TOKEN`, else `metrics-token`
 * made once in corral's config directory, mode 0600), and warnings for
 * tool or toolset names in `identities` that match nothing.
 *
 * @module
 */
import { type CorralConfig, envVar } from "../config/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import { ownedFileProblem } from "../base/mod.ts";
import { operatorNotes, type SharedState, unknownAccessNames } from "../identity/mod.ts";
import { AuditLog } from "../audit/mod.ts";
import {
  AuthFailures,
  type HttpIdentity,
  httpIdentityFromConfig,
  type McpRegistry,
  serverToken,
  teamPolicy,
} from "../mcp/mod.ts";
import { telemetry } from "../telemetry/mod.ts";
import { sharedStateOf } from "./_shared_state_option.ts";
import type { Registry } from "../registry/mod.ts";
import { type CliSession, openRegistry } from "./_open_registry.ts";
import type { CliValues } from "./_options.ts";
import { sandboxLimitsOf } from "./_sandbox_limits.ts";

/** The team side of one HTTP server, and how to close what it opened. */
export interface TeamServer {
  /** For `serveHttp`'s `identity` option. */
  identity: HttpIdentity;
  /** The metrics token's file, when corral made or read it. */
  metricsTokenFile?: string;
  /** Close the registries opened for identity workspaces. */
  close(): Promise<void>;
}

/** Build the team side for a server whose default token is `token` (undefined: `--no-token`). */
export async function teamServer(
  values: CliValues,
  session: CliSession,
  token: string | undefined,
): Promise<TeamServer> {
  const { config, workspace } = session.plugins;
  await _checkConfigOwner(config);
  const policy = teamPolicy(config, workspace);
  for (
    const w of [
      ...unknownAccessNames(config.identities, session.registry.list()),
      ...operatorNotes(config.identities),
    ]
  ) {
    session.reporter.line(`Warning: corral.json ${w}`, "yellow");
  }
  const registries = new Map<string, Registry>();
  let state: SharedState | undefined;
  const close = async () => {
    for (const r of registries.values()) await r.close().catch(() => {});
    await state?.close();
  };
  try {
    // First: a shared state that cannot be reached refuses the start before anything opens.
    state = await sharedStateOf(values, config);
    await _openWorkspaces(values, session, policy.workspaces(), registries);
    const metrics = await _metricsToken();
    const identity = await httpIdentityFromConfig(config, {
      defaultToken: token,
      serverWorkspace: workspace,
      policy,
      registries: registries as Map<string, McpRegistry>,
      metricsToken: metrics.token,
      state,
      failures: _authFailures(config),
    });
    if (state.where !== "this replica") {
      session.reporter.line(`corral: limits and revocations shared through ${state.where}`);
    }
    return { identity, metricsTokenFile: metrics.file, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** A registry for each identity workspace (made, 0700, when missing), with the server's limits. */
async function _openWorkspaces(
  values: CliValues,
  session: CliSession,
  workspaces: Iterable<string>,
  registries: Map<string, Registry>,
): Promise<void> {
  for (const ws of workspaces) {
    await Deno.mkdir(ws, { recursive: true, mode: 0o700 });
    const opened = await openRegistry({ ...values, workspace: ws }, session.reporter);
    opened.registry.sandboxes.setLimits(sandboxLimitsOf(values));
    registries.set(ws, opened.registry);
  }
}

/** The token `/metrics` asks for: `CORRAL_METRICS_TOKEN`, else one corral made, and its file. */
async function _metricsToken(): Promise<{ token: string; file?: string }> {
  const given = envVar("CORRAL_METRICS_TOKEN");
  if (given) return { token: given };
  const made = await serverToken(undefined, "metrics-token");
  return { token: made.token, file: made.file };
}

/**
 * A config that names identities or how they authenticate decides who is
 * the operator and who may call: like the tokens file, it must be out of
 * other users' reach (owned by corral's user or root, not writable by
 * others), else the server does not start.
 */
async function _checkConfigOwner(config: CorralConfig): Promise<void> {
  const decides = Object.keys(config.identities).length > 0 || config.auth.jwks !== null ||
    config.auth.operatorIdentities.length > 0;
  if (!decides) return;
  // Every layer of corral.json in use (user, trusted project, --config) may name them.
  for (const file of config.files ?? (config.file ? [config.file] : [])) {
    const problem = ownedFileProblem(file, await Deno.stat(file), {
      what: "the config file (it names identities)",
    });
    if (problem) throw new ConfigError(`Cannot serve: ${problem}`);
  }
}

/** Failed authentication: counted, logged on stderr, and audited when there is an audit log. */
function _authFailures(config: CorralConfig): AuthFailures {
  // The settings' audit log (corral.json `audit`, or --audit over it), rotated as the registry's.
  const log = config.audit
    ? new AuditLog(config.audit, { maxBytes: config.auditMaxBytes ?? undefined })
    : undefined;
  return new AuthFailures({
    metrics: telemetry,
    audit: log && ((record) => void log.append(record).catch(() => {})),
  });
}
