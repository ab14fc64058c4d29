/**
 * A hosted server's environment: a small fixed base, its own entries with
 * `${workspace}` filled in, and each `{"secret": "NAME"}` read from the
 * host's variable NAME. A secret with `inject` never enters the namespace:
 * the server holds a placeholder, and its egress proxy puts the secret in
 * the named header of requests to the named hosts
 * (core/egress/egress_inject.ts). Nothing else of the host's environment
 * reaches it.
 *
 * @module
 */
import { envVar, type ServerEntry } from "../config/mod.ts";
import { type InjectedSecret, placeholderFor } from "../egress/mod.ts";
import { NAMESPACE_HOME } from "../jail/mod.ts";

/** A server's environment, the secret values to scrub, and the secrets injected at egress. */
export interface ServerEnv {
  env: Record<string, string>;
  /** Every secret value (scrubbed from everything the server says). */
  secrets: string[];
  /** The secrets its proxy puts in; the environment holds their placeholders. */
  injected: InjectedSecret[];
}

/**
 * The server's whole environment (missing secret: an error naming it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { serverEnv } from "./_server_env.ts";
 * Deno.env.set("DOC_TOKEN", "s3cret-doc-token");
 * const entry = { env: { T: { secret: "DOC_TOKEN", inject: { hosts: ["api.example"], header: "Authorization", format: "Bearer {}" } } } };
 * const { env, injected } = serverEnv(entry as never, "/ws");
 * assert.equal(env.T, injected[0].placeholder);
 * assert.ok(!JSON.stringify(env).includes("s3cret-doc-token"));
 * ```
 */
export function serverEnv(entry: ServerEntry, workspace: string): ServerEnv {
  const env: Record<string, string> = {
    PATH: "/usr/local/bin:/usr/bin:/bin",
    HOME: NAMESPACE_HOME,
    LANG: "C.UTF-8",
    NO_COLOR: "1",
    DENO_NO_UPDATE_CHECK: "1",
    PYTHONDONTWRITEBYTECODE: "1",
  };
  const secrets: string[] = [];
  const injected: InjectedSecret[] = [];
  for (const [k, v] of Object.entries(entry.env)) {
    if (typeof v === "string") {
      env[k] = v.replaceAll("${workspace}", workspace);
      continue;
    }
    const value = envVar(v.secret);
    if (value === undefined) {
      throw new Error(
        `the secret ${k} is read from the host variable ${v.secret}, which is not set`,
      );
    }
    if (value.length >= 4) secrets.push(value);
    if (!v.inject) {
      env[k] = value;
      continue;
    }
    const placeholder = placeholderFor(v.secret);
    env[k] = placeholder;
    injected.push({
      name: v.secret,
      placeholder,
      value,
      hosts: v.inject.hosts.map((h) => h.toLowerCase()),
      header: v.inject.header,
      format: v.inject.format ?? "{}",
    });
  }
  return { env, secrets, injected };
}
