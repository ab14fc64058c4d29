/**
 * `corral tokens add NAME | revoke NAME | list [--json]`: the static bearer
 * tokens of an HTTP server, each naming an identity. Only hashes are kept
 * (in `auth.tokens_file`, default `tokens.json` in corral's config
 * directory, mode 0600); `add` prints the token once.
 *
 * @module
 */
import { loadConfig } from "../config/corral_config.ts";
import { addToken, readTokens, revokeToken } from "../identity/token_store.ts";
import { terminalSafe } from "../tool/reporter.ts";
import { type CliValues, UsageError } from "./options.ts";
import { out } from "./output.ts";

/** Run `corral tokens`; returns the exit code. */
export async function tokensCommand(values: CliValues, rest: string[]): Promise<number> {
  const [sub, name, ...extra] = rest;
  if (extra.length) throw new UsageError(`tokens ${sub} takes one name, got ${rest.length - 1}`);
  const file = (await loadConfig({ file: values.config })).auth.tokensFile;
  if (sub === "add" || sub === "revoke") {
    if (!name) throw new UsageError(`tokens ${sub} needs a NAME (the identity)`);
    if (sub === "add") {
      const token = await addToken(name, file).catch((err) => {
        throw err instanceof TypeError
          ? new UsageError(err.message.replace(/^Cannot /, "cannot "))
          : err;
      });
      out(token);
      console.error(
        terminalSafe(`corral: token for "${name}" added to ${file}; it is shown only this once`),
      );
      return 0;
    }
    if (!await revokeToken(name, file)) {
      throw new UsageError(`no token for "${name}" in ${file} (corral tokens list)`);
    }
    console.error(terminalSafe(`corral: token of "${name}" revoked in ${file}`));
    return 0;
  }
  if (sub !== "list") throw new UsageError(`unknown tokens command "${sub}" (add, revoke, list)`);
  if (name) throw new UsageError(`tokens list takes no arguments, got "${name}"`);
  const entries = await readTokens(file);
  if (values.json) {
    out(JSON.stringify({ file, tokens: entries.map(({ name, created }) => ({ name, created })) }));
    return 0;
  }
  if (!entries.length) out(terminalSafe(`no tokens in ${file} (corral tokens add NAME)`));
  for (const e of entries) out(terminalSafe(`${e.name}  created ${e.created}`));
  return 0;
}
