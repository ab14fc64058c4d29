/**
 * The team keys of `corral.json`: `identities` (what each caller may list
 * and call, its workspace, its limits) and `auth` (the tokens file, a JWKS
 * for JWTs, the protected-resource metadata). Validated with zod (unknown
 * keys get "did you mean" from ./policy.ts); paths resolve against the
 * config file's folder.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { z } from "zod";
import { ConfigError } from "../tool/mod.ts";
import { expandHome } from "./env_var.ts";
import { configDir } from "./install_dir.ts";

/** What an identity name may look like (a token name, a JWT claim value). */
export const IDENTITY_NAME = /^[A-Za-z0-9][A-Za-z0-9._@:|+-]{0,127}$/;

/**
 * The operator's identity: the server's own token (`--token`, `mcp-token`),
 * or every caller of a server without one (`--no-token`). A role of its
 * own, never a name in the claim space: {@link IDENTITY_NAME} cannot match
 * it (it starts with `@`), so no token name or JWT claim turns into it,
 * unless the operator lists that name in `auth.operator_identities`.
 */
export const OPERATOR_IDENTITY = "@operator";

/**
 * Names no token or JWT may claim: `local` is what the audit log calls the
 * command line and stdio (the operator at the machine).
 */
export const RESERVED_IDENTITIES: readonly string[] = ["local"];

/**
 * Whether `name` may be an identity a caller claims: an identity name
 * ({@link IDENTITY_NAME}) that is not reserved.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { claimableIdentity, OPERATOR_IDENTITY } from "./team_config.ts";
 * assert.ok(claimableIdentity("alice") && claimableIdentity("default"));
 * assert.ok(!claimableIdentity(OPERATOR_IDENTITY) && !claimableIdentity("local"));
 * ```
 */
export function claimableIdentity(name: unknown): name is string {
  return typeof name === "string" && IDENTITY_NAME.test(name) &&
    !RESERVED_IDENTITIES.includes(name);
}

const _NAME_RULE =
  "must start with a letter or digit and hold only letters, digits and . _ @ : | + - (128 at most)";
const _name = z.string().regex(IDENTITY_NAME, _NAME_RULE).refine(
  (n) => !RESERVED_IDENTITIES.includes(n),
  (n) => ({ message: `"${n}" is reserved (the audit log's name for the command line)` }),
);
const _list = z.object({
  allow: z.array(z.string().min(1, "must not be empty")).optional()
    .describe("Only these (none given: all)"),
  deny: z.array(z.string().min(1, "must not be empty")).optional()
    .describe("Never these (wins over allow)"),
}).strict();
const _count = z.number().int().positive();

/** `identities.<name>.limits`. */
const _limits = z.object({
  concurrent: _count.optional().describe("Calls of this identity running at once"),
  queued: z.number().int().nonnegative().optional()
    .describe("Calls of this identity waiting for a slot (0: refused at once beyond concurrent)"),
  sessions: _count.optional().describe("Sessions of this identity open at once"),
  connections: _count.optional().describe("Requests of this identity in flight at once"),
  per_minute: _count.optional().describe("Calls of this identity per minute (token bucket)"),
  sampling_per_call: z.number().int().nonnegative().optional()
    .describe("Sampling requests one call may make (0: none)"),
  elicitation_per_call: z.number().int().nonnegative().optional()
    .describe("Elicitation requests one call may make (0: none)"),
}).strict();

/** `identities.<name>`. */
export const identitySchema = z.object({
  tools: _list.optional().describe("Tool names it may list and call"),
  toolsets: _list.optional().describe("Toolsets whose tools it may list and call"),
  workspace: z.string().min(1, "must not be empty").optional()
    .describe("Its workspace (default: auth.workspaces_dir/<name>)"),
  shared_workspace: z.boolean().optional()
    .describe("Agree to share the workspace with other identities that name it too"),
  share_sandboxes: z.boolean().optional()
    .describe("Its sessions share sandboxes (default: one per session)"),
  limits: _limits.optional(),
}).strict();

/** `identities`: one entry per identity name, and `@operator` for the server's own token. */
export const identitiesSchema = z.record(
  z.union([z.literal(OPERATOR_IDENTITY), _name]),
  identitySchema,
);

/** `auth`. */
export const authSchema = z.object({
  tokens_file: z.string().min(1, "must not be empty").optional()
    .describe("Static tokens (hashes), default <config dir>/tokens.json"),
  jwks: z.object({
    file: z.string().min(1, "must not be empty").optional().describe("A JWKS file"),
    url: z.string().url().optional().describe("A JWKS URL (https)"),
    audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .describe("The aud a JWT must carry"),
    issuer: z.string().min(1, "must not be empty").describe("The iss a JWT must carry"),
    claim: z.string().min(1, "must not be empty").optional()
      .describe("The claim naming the identity (default sub)"),
    clock_skew_seconds: z.number().int().min(0).max(300).optional()
      .describe("Leeway for exp and nbf (default 30)"),
  }).strict().refine((j) => (j.file === undefined) !== (j.url === undefined), {
    message: "give exactly one of file and url",
  }).optional(),
  workspaces_dir: z.string().min(1, "must not be empty").optional()
    .describe("Where identities without a workspace get one: <dir>/<name>"),
  resource: z.string().url().optional()
    .describe("This server's URL as clients see it (protected-resource metadata)"),
  authorization_servers: z.array(z.string().url()).optional()
    .describe("OAuth authorization servers that issue tokens for it"),
  operator_identities: z.array(_name).optional()
    .describe("Identities (token names, JWT claim values) that are the operator (@operator)"),
}).strict();

/** One identity's policy, resolved. */
export interface IdentityConfig {
  /** Its name. */
  name: string;
  /** Tool names: allow (undefined: no list) and deny. */
  tools: { allow?: string[]; deny: string[] };
  /** Toolset names: allow (undefined: no list) and deny. */
  toolsets: { allow?: string[]; deny: string[] };
  /** Its workspace (absolute), or null: `auth.workspaces_dir/<name>` or the server's. */
  workspace: string | null;
  /** Whether it agreed to share its workspace. */
  sharedWorkspace: boolean;
  /**
   * Whether its sessions share sandboxes (one principal, `identity:<name>`):
   * less memory, but what one session leaves running reaches its others.
   */
  shareSandboxes: boolean;
  /** Its limits; an absent one is not limited per identity. */
  limits: {
    concurrent?: number;
    queued?: number;
    sessions?: number;
    connections?: number;
    perMinute?: number;
    samplingPerCall?: number;
    elicitationPerCall?: number;
  };
}

/** The `auth` section, resolved. */
export interface AuthConfig {
  /** The static tokens file (absolute). */
  tokensFile: string;
  /** JWT verification, or null when JWTs are not accepted. */
  jwks: {
    file?: string;
    url?: string;
    audience: string[];
    issuer: string;
    claim: string;
    clockSkewSeconds: number;
  } | null;
  /** Where identities without a workspace get one, or null. */
  workspacesDir: string | null;
  /** The server's URL for the protected-resource metadata, or null (the request's). */
  resource: string | null;
  /** Authorization servers named in the protected-resource metadata. */
  authorizationServers: string[];
  /**
   * Identities that are the operator (`auth.operator_identities`): the only
   * way a token name or claim value becomes {@link OPERATOR_IDENTITY}.
   */
  operatorIdentities: string[];
}

/**
 * Resolve the validated `identities` and `auth` sections. Two identities
 * naming the same workspace is a {@link ConfigError} unless both set
 * `shared_workspace`; a token file default is `<config dir>/tokens.json`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { resolveTeamConfig } from "./team_config.ts";
 * const t = resolveTeamConfig(
 *   { alice: { tools: { deny: ["RunBashCode"] }, workspace: "ws/alice" } },
 *   { jwks: { file: "keys.json", audience: "corral", issuer: "https://idp" } },
 *   "/srv",
 *   "/srv/corral.json",
 * );
 * assert.equal(t.identities.alice.workspace, "/srv/ws/alice");
 * assert.equal(t.auth.jwks?.claim, "sub");
 * ```
 */
export function resolveTeamConfig(
  identities: z.infer<typeof identitiesSchema> | undefined,
  auth: z.infer<typeof authSchema> | undefined,
  baseDir: string,
  file: string,
): { identities: Record<string, IdentityConfig>; auth: AuthConfig } {
  const path = (p: string) => resolve(baseDir, expandHome(p));
  const out: Record<string, IdentityConfig> = {};
  for (const [name, d] of Object.entries(identities ?? {})) {
    out[name] = {
      name,
      tools: { allow: d.tools?.allow, deny: d.tools?.deny ?? [] },
      toolsets: { allow: d.toolsets?.allow, deny: d.toolsets?.deny ?? [] },
      workspace: d.workspace ? path(d.workspace) : null,
      sharedWorkspace: d.shared_workspace ?? false,
      shareSandboxes: d.share_sandboxes ?? false,
      limits: {
        concurrent: d.limits?.concurrent,
        queued: d.limits?.queued,
        sessions: d.limits?.sessions,
        connections: d.limits?.connections,
        perMinute: d.limits?.per_minute,
        samplingPerCall: d.limits?.sampling_per_call,
        elicitationPerCall: d.limits?.elicitation_per_call,
      },
    };
  }
  _checkSharedWorkspaces(out, file);
  const j = auth?.jwks;
  return {
    identities: out,
    auth: {
      tokensFile: auth?.tokens_file ? path(auth.tokens_file) : join(configDir(), "tokens.json"),
      jwks: j
        ? {
          file: j.file ? path(j.file) : undefined,
          url: j.url,
          audience: typeof j.audience === "string" ? [j.audience] : j.audience,
          issuer: j.issuer,
          claim: j.claim ?? "sub",
          clockSkewSeconds: j.clock_skew_seconds ?? 30,
        }
        : null,
      workspacesDir: auth?.workspaces_dir ? path(auth.workspaces_dir) : null,
      resource: auth?.resource ?? null,
      authorizationServers: auth?.authorization_servers ?? [],
      operatorIdentities: auth?.operator_identities ?? [],
    },
  };
}

function _checkSharedWorkspaces(ids: Record<string, IdentityConfig>, file: string): void {
  const byDir = new Map<string, IdentityConfig[]>();
  for (const id of Object.values(ids)) {
    if (id.workspace) byDir.set(id.workspace, [...byDir.get(id.workspace) ?? [], id]);
  }
  const lines: string[] = [];
  for (const [dir, group] of byDir) {
    const unshared = group.filter((g) => !g.sharedWorkspace);
    if (group.length > 1 && unshared.length) {
      lines.push(
        `${file}: identities.${unshared[0].name}.workspace: "${dir}" is also the workspace of ` +
          `${group.filter((g) => g !== unshared[0]).map((g) => `"${g.name}"`).join(", ")}; ` +
          `set "shared_workspace": true in each to share it`,
      );
    }
  }
  if (lines.length) throw new ConfigError(lines.join("\n"));
}
