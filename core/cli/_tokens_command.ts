/**
 * `corral tokens add NAME [--expires 30d] | revoke NAME | list [--json]`:
 * the static bearer tokens of an HTTP server, each naming an identity. Only
 * hashes are kept (in `auth.tokens_file`, default `tokens.json` in corral's
 * config directory, mode 0600); `add` prints the token once. A token with
 * an expiry is refused from that moment on. With a shared state
 * (`--shared-state redis://…`), `revoke` reaches every replica, JWTs too.
 *
 * @module
 */
import type { CorralConfig } from "../config/mod.ts";
import { addToken, readTokens, revokeToken } from "../identity/mod.ts";
import { terminalSafe } from "../tool/mod.ts";
import { cliSettings } from "./_cli_settings.ts";
import { type CliValues, UsageError } from "./_options.ts";
import { out } from "./_output.ts";
import { sharedStateOf } from "./_shared_state_option.ts";

/** Run `corral tokens`; returns the exit code. */
export async function tokensCommand(values: CliValues, rest: string[]): Promise<number> {
  const [sub, name, ...extra] = rest;
  if (extra.length) throw new UsageError(`tokens ${sub} takes one name, got ${rest.length - 1}`);
  const { config } = await cliSettings(values, { quiet: true });
  const file = config.auth.tokensFile;
  if (values.expires !== undefined && sub !== "add") {
    throw new UsageError(`--expires goes with tokens add, not tokens ${sub}`);
  }
  if (sub === "add" || sub === "revoke") {
    if (!name) throw new UsageError(`tokens ${sub} needs a NAME (the identity)`);
    if (sub === "add") {
      const expires = values.expires === undefined ? undefined : parseExpiry(values.expires);
      const token = await addToken(name, file, { expires }).catch((err) => {
        throw err instanceof TypeError
          ? new UsageError(err.message.replace(/^Cannot /, "cannot "))
          : err;
      });
      out(token);
      console.error(
        terminalSafe(
          `corral: token for "${name}" added to ${file}` +
            (expires ? ` (expires ${expires.toISOString()})` : "") +
            "; it is shown only this once",
        ),
      );
      return 0;
    }
    return await _revoke(name, file, values, config);
  }
  if (sub !== "list") throw new UsageError(`unknown tokens command "${sub}" (add, revoke, list)`);
  if (name) throw new UsageError(`tokens list takes no arguments, got "${name}"`);
  const entries = await readTokens(file);
  if (values.json) {
    const tokens = entries.map(({ name, created, expires }) => ({ name, created, expires }));
    out(JSON.stringify({ file, tokens }));
    return 0;
  }
  if (!entries.length) out(terminalSafe(`no tokens in ${file} (corral tokens add NAME)`));
  for (const e of entries) {
    const until = e.expires === undefined
      ? ""
      : Date.parse(e.expires) > Date.now()
      ? `  expires ${e.expires}`
      : `  EXPIRED ${e.expires}`;
    out(terminalSafe(`${e.name}  created ${e.created}${until}`));
  }
  return 0;
}

/**
 * `tokens revoke NAME`: its static token is removed from the tokens file;
 * with a shared state (`--shared-state`, `shared_state`), every credential
 * of NAME issued until now (its token, its JWTs by `iat`) is refused by
 * every replica, and their work stops within seconds.
 */
async function _revoke(
  name: string,
  file: string,
  values: CliValues,
  config: CorralConfig,
): Promise<number> {
  const removed = await revokeToken(name, file);
  const shared = values["shared-state"] ?? config.sharedState ?? undefined;
  if (!removed && shared === undefined) {
    throw new UsageError(`no token for "${name}" in ${file} (corral tokens list)`);
  }
  if (removed) console.error(terminalSafe(`corral: token of "${name}" revoked in ${file}`));
  if (shared !== undefined) {
    const state = await sharedStateOf(values, config);
    try {
      await state.revoke(name);
    } finally {
      await state.close();
    }
    console.error(
      terminalSafe(
        `corral: every credential of "${name}" issued until now is revoked on every replica ` +
          `sharing ${state.where} (tokens and JWTs)`,
      ),
    );
  }
  return 0;
}

/**
 * `--expires`: a duration from now (`90m`, `12h`, `30d`) or an ISO time.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseExpiry } from "./_tokens_command.ts";
 * const now = new Date("2026-01-01T00:00:00Z");
 * assert.equal(parseExpiry("30d", now).toISOString(), "2026-01-31T00:00:00.000Z");
 * assert.throws(() => parseExpiry("soon", now), /--expires/);
 * ```
 */
export function parseExpiry(text: string, now: Date = new Date()): Date {
  const m = /^(\d+)\s*(s|m|h|d)$/.exec(text.trim());
  const unit = m && { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[m[2] as "s"];
  const at = m ? now.getTime() + Number(m[1]) * unit! : /^\d+$/.test(text) ? NaN : Date.parse(text);
  if (Number.isNaN(at) || at <= now.getTime()) {
    throw new UsageError(
      `--expires must be a duration like 12h or 30d, or an ISO time in the future; got "${text}"`,
    );
  }
  return new Date(at);
}
