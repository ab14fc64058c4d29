/**
 * Static bearer tokens, each naming one identity. The file (default
 * `tokens.json` in corral's config directory) holds only SHA-256 hashes of
 * the tokens, is written atomically with mode 0600, and is refused when
 * others may read or write it. A token is shown once, when it is made;
 * a token may carry an expiry (refused from then on); revoking removes its
 * hash, and a running server sees the change at its next request (the file is read again when its size, mtime or inode
 * changes).
 *
 * @module
 */
import { dirname } from "node:path";
import { ownedFileProblem, sha256Hex } from "../base/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import { claimableIdentity, IDENTITY_NAME } from "../config/mod.ts";

/** One entry of the tokens file. */
export interface TokenEntry {
  /** The identity the token names. */
  name: string;
  /** SHA-256 of the token, hex. */
  sha256: string;
  /** When it was made (ISO 8601). */
  created: string;
  /** When it stops being accepted (ISO 8601); absent: never. */
  expires?: string;
}

/** Options of {@link addToken}. */
export interface AddTokenOptions {
  /** Refuse the token from this moment on (absent: it never expires). */
  expires?: Date;
}

const _PREFIX = "corral_";

/**
 * Read the tokens file: `[]` when it does not exist. A file that others may
 * read or write, or that is not valid, is a {@link ConfigError}.
 */
export async function readTokens(file: string): Promise<TokenEntry[]> {
  let st: Deno.FileInfo;
  try {
    st = await Deno.stat(file);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw new ConfigError(`Cannot read tokens file "${file}": ${(err as Error).message}`);
  }
  _checkMode(file, st);
  return _parse(await Deno.readTextFile(file), file);
}

/**
 * Make a token for `name`, store its hash and return the token (shown once).
 * A name that already has a token, or a reserved one (`local`), is refused;
 * no name is the operator's (`@operator`, not an identity name).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { addToken, readTokens } from "./token_store.ts";
 * const file = `${await Deno.makeTempDir()}/tokens.json`;
 * const token = await addToken("alice", file);
 * assert.match(token, /^corral_[A-Za-z0-9_-]{43}$/);
 * const [entry] = await readTokens(file);
 * assert.ok(entry.name === "alice" && !JSON.stringify(entry).includes(token));
 * assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
 * ```
 */
export async function addToken(
  name: string,
  file: string,
  options: AddTokenOptions = {},
): Promise<string> {
  if (!IDENTITY_NAME.test(name)) {
    throw new TypeError(
      `Cannot add a token for "${name}": a name starts with a letter or digit and holds only ` +
        "letters, digits and . _ @ : | + - (128 at most)",
    );
  }
  if (!claimableIdentity(name)) {
    throw new TypeError(
      `Cannot add a token for "${name}": that name is reserved (the audit log's name for the ` +
        "command line); the server's own token is the operator (@operator); pick another name",
    );
  }
  const entries = await readTokens(file);
  if (entries.some((e) => e.name === name)) {
    throw new TypeError(
      `Cannot add a token for "${name}": it has one already (corral tokens revoke ${name} first)`,
    );
  }
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const token = _PREFIX + btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-")
    .replace(/\//g, "_").replace(/=+$/, "");
  const entry: TokenEntry = { name, sha256: sha256Hex(token), created: new Date().toISOString() };
  if (options.expires) {
    if (!(options.expires.getTime() > Date.now())) {
      throw new TypeError(`Cannot add a token for "${name}": its expiry is not in the future`);
    }
    entry.expires = options.expires.toISOString();
  }
  entries.push(entry);
  await _write(file, entries);
  return token;
}

/** Remove `name`'s token; false when it had none. */
export async function revokeToken(name: string, file: string): Promise<boolean> {
  const entries = await readTokens(file);
  const kept = entries.filter((e) => e.name !== name);
  if (kept.length === entries.length) return false;
  await _write(file, kept);
  return true;
}

/**
 * The tokens file as a running server sees it: read again when it changes,
 * so that a revoked token is refused at its next use.
 */
export class TokenStore {
  #file: string;
  #stamp = "";
  #entries: TokenEntry[] = [];

  /** A store over `file` (it may not exist yet). */
  constructor(file: string) {
    this.#file = file;
  }

  /** The file. */
  get file(): string {
    return this.#file;
  }

  /**
   * The identity whose token `token` is, or null (unknown, revoked, or past
   * its `expires`). Every stored hash is compared in full (constant time
   * per entry, no early exit).
   */
  async identityOf(token: string): Promise<string | null> {
    return (await this.entryOf(token))?.name ?? null;
  }

  /** The entry of `token` (see {@link identityOf}): its name and when it was made; or null. */
  async entryOf(token: string): Promise<TokenEntry | null> {
    await this.#refresh();
    if (!token.startsWith(_PREFIX)) return null;
    const hash = new TextEncoder().encode(sha256Hex(token));
    let found: TokenEntry | null = null;
    for (const e of this.#entries) {
      if (constantTimeEqual(hash, new TextEncoder().encode(e.sha256))) found ??= e;
    }
    if (found?.expires !== undefined && !(Date.parse(found.expires) > Date.now())) return null;
    return found;
  }

  async #refresh(): Promise<void> {
    let stamp = "none";
    try {
      // Synchronous: about 1 µs, where an async stat waits for a thread (about 40 µs).
      const st = Deno.statSync(this.#file);
      stamp = `${st.ino}:${st.size}:${st.mtime?.getTime()}:${st.mode}`;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    if (stamp === this.#stamp) return;
    this.#entries = stamp === "none" ? [] : await readTokens(this.#file);
    this.#stamp = stamp;
  }
}

/** Compare two byte strings without stopping at the first difference (the length may leak). */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a[i] ?? 0) ^ b[i];
  return diff === 0;
}

function _checkMode(file: string, st: Deno.FileInfo): void {
  const problem = ownedFileProblem(file, st, {
    what: "tokens file",
    secret: true,
    rootOwned: false,
  });
  if (problem) throw new ConfigError(problem);
}

function _parse(text: string, file: string): TokenEntry[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`tokens file "${file}" is not valid JSON: ${(err as Error).message}`);
  }
  const tokens = (json as { tokens?: unknown })?.tokens;
  if (!Array.isArray(tokens)) {
    throw new ConfigError(`tokens file "${file}": expected {"tokens": [...]}`);
  }
  return tokens.map((t, i) => {
    const e = t as Partial<TokenEntry>;
    if (
      !claimableIdentity(e?.name) ||
      typeof e.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(e.sha256)
    ) {
      throw new ConfigError(`tokens file "${file}": tokens[${i}] needs a name and a sha256`);
    }
    if (
      e.expires !== undefined && (typeof e.expires !== "string" || isNaN(Date.parse(e.expires)))
    ) {
      throw new ConfigError(`tokens file "${file}": tokens[${i}].expires is not a date`);
    }
    const entry: TokenEntry = { name: e.name, sha256: e.sha256, created: String(e.created ?? "") };
    if (e.expires !== undefined) entry.expires = e.expires;
    return entry;
  });
}

async function _write(file: string, entries: TokenEntry[]): Promise<void> {
  await Deno.mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${crypto.randomUUID()}.tmp`;
  try {
    await Deno.writeTextFile(tmp, JSON.stringify({ tokens: entries }, null, 2) + "\n", {
      mode: 0o600,
      createNew: true,
    });
    await Deno.chmod(tmp, 0o600);
    await Deno.rename(tmp, file);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw new ConfigError(`Cannot write tokens file "${file}": ${(err as Error).message}`);
  }
}
