/**
 * Where a running `corral mcp --http` server takes its bearer token from:
 * the environment variable `CORRAL_MCP_TOKEN`, the token file corral made,
 * or `--token` on its command line. Each server records it (never the
 * token: a salted SHA-256 of it) in corral's config directory while it
 * serves, so that `corral mcp --client-config --http URL`, run later in
 * another shell, writes an entry for the token that server accepts and says
 * where it comes from, instead of making a token no server knows.
 *
 * @module
 */
import { join } from "node:path";
import { configDir } from "../config/mod.ts";
import { sha256Hex } from "../base/mod.ts";

/** The environment variable a server reads its token from, and clients' entries name. */
export const TOKEN_VAR = "CORRAL_MCP_TOKEN";

/** Where a server's token comes from. */
export type TokenSource =
  | { kind: "env"; variable: string }
  | { kind: "file"; file: string }
  | { kind: "flag" }
  | { kind: "none" };

/** What a running server records while it serves. */
export interface ServerRecord {
  url: string;
  hostname: string;
  port: number;
  pid: number;
  source: TokenSource;
  /** `sha256(salt + token)`, hex, and its salt: a token can be checked, not read back. */
  digest?: string;
  salt?: string;
}

/** The folder of the records (in corral's config directory, hidden from every tool). */
export function recordsDir(dir: string = configDir()): string {
  return join(dir, "mcp-http");
}

/**
 * Record that this process serves `url` with a token from `source`; the
 * returned function removes the record (when the server stops).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { recordServer, runningServer, tokenMatches } from "./token_source.ts";
 * const dir = await Deno.makeTempDir();
 * const url = "http://127.0.0.1:8765/mcp";
 * const source = { kind: "env" as const, variable: "CORRAL_MCP_TOKEN" };
 * const remove = await recordServer({ url, hostname: "127.0.0.1", port: 8765, source }, "t0k", dir);
 * const found = await runningServer(url, dir);
 * assert.equal(found?.source.kind, "env");
 * assert.ok(tokenMatches(found!, "t0k") && !tokenMatches(found!, "other"));
 * await remove();
 * assert.equal(await runningServer(url, dir), undefined);
 * ```
 */
export async function recordServer(
  server: Omit<ServerRecord, "pid" | "digest" | "salt">,
  token: string | undefined,
  dir: string = configDir(),
): Promise<() => Promise<void>> {
  const folder = recordsDir(dir);
  await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
  const salt = crypto.randomUUID();
  const record: ServerRecord = {
    ...server,
    pid: Deno.pid,
    ...(token === undefined ? {} : { salt, digest: sha256Hex(salt + token) }),
  };
  const file = join(folder, `${server.port}-${Deno.pid}.json`);
  await Deno.writeTextFile(file, JSON.stringify(record), { mode: 0o600 });
  return () => Deno.remove(file).catch(() => {});
}

/** Whether `token` is the one the recorded server takes. */
export function tokenMatches(record: ServerRecord, token: string): boolean {
  return record.digest !== undefined && sha256Hex((record.salt ?? "") + token) === record.digest;
}

/**
 * The live server that serves `url` (same port; the same host, a loopback
 * name for a loopback one, or any host for one that listens on all), or
 * undefined. Records of processes that ended are ignored (and removed).
 */
export async function runningServer(
  url: string,
  dir: string = configDir(),
): Promise<ServerRecord | undefined> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return undefined;
  }
  const port = Number(target.port || (target.protocol === "https:" ? 443 : 80));
  const host = target.hostname.replace(/^\[|\]$/g, "");
  const folder = recordsDir(dir);
  let names: string[] = [];
  try {
    names = [...Deno.readDirSync(folder)].map((e) => e.name).filter((n) => n.endsWith(".json"));
  } catch {
    return undefined;
  }
  for (const name of names.sort()) {
    let record: ServerRecord;
    try {
      record = JSON.parse(await Deno.readTextFile(join(folder, name)));
    } catch {
      continue;
    }
    if (record.port !== port || !_sameHost(record.hostname, host)) continue;
    if (record.pid !== Deno.pid && !_alive(record.pid)) {
      await Deno.remove(join(folder, name)).catch(() => {});
      continue;
    }
    return record;
  }
  return undefined;
}

function _sameHost(listen: string, host: string): boolean {
  const loop = (h: string) => h === "localhost" || h === "::1" || /^127\./.test(h);
  if (listen === host || listen === "0.0.0.0" || listen === "::") return true;
  return loop(listen) && loop(host);
}

/** Whether a process of that id is running (Linux: `/proc`; elsewhere, trusted as alive). */
function _alive(pid: number): boolean {
  if (Deno.build.os !== "linux") return true;
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch (err) {
    return !(err instanceof Deno.errors.NotFound);
  }
}
