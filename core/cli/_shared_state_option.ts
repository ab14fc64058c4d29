/**
 * `--shared-state redis://HOST:PORT` (else `shared_state` in corral.json):
 * where an HTTP server counts its limits and revocations, shared by every
 * replica; without it, the replica's own. Used by `corral mcp --http` and
 * `corral tokens revoke`.
 *
 * @module
 */
import type { CorralConfig } from "../config/mod.ts";
import { LocalState, type SharedState } from "../identity/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import type { CliValues } from "./_options.ts";

/**
 * Where limits are counted: `--shared-state` (else `shared_state` in
 * corral.json) names a Redis every replica shares; without it, this
 * replica's own. A Redis that cannot be reached is a ConfigError (fail closed).
 */
export async function sharedStateOf(
  values: CliValues,
  config: Pick<CorralConfig, "sharedState">,
): Promise<SharedState> {
  const url = values["shared-state"] ?? config.sharedState ?? undefined;
  if (url === undefined) return new LocalState();
  if (!/^redis:\/\/[^\s/]+(\/\d*)?$/.test(url)) {
    throw new ConfigError(`--shared-state must be redis://HOST:PORT, got "${url}"`);
  }
  // The Redis client loads only when a shared state is asked for.
  const { RedisState } = await import("../identity/redis_state.ts");
  return await RedisState.connect(url);
}
