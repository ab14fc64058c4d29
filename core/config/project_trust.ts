/**
 * Project files that can be trusted, the way direnv and mise do it: a
 * `corral.json` or `permissions.json` in the workspace is used only after
 * `corral trust` recorded the SHA-256 of its content in corral's config
 * directory (`trusted.json`, readable by the user only, hidden from every
 * tool). From then on exactly that content is used: the text that is hashed
 * is the text that is parsed. A changed file is refused with one line and
 * the command that trusts it again.
 *
 * Inside every sandbox these files are read-only, existing or not
 * (`PROJECT_FILES` in core/config/trust_base.ts).
 *
 * @module
 */
import { dirname, join } from "node:path";
import { sha256Hex } from "../base/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import { type CorralConfig, parseConfig } from "./corral_config.ts";
import { configDir } from "./install_dir.ts";
import { parsePolicy, type Policy, readyJsonc } from "./policy.ts";

/** The file in corral's config directory that holds the trusted hashes. */
export const TRUST_STORE = "trusted.json";

/** What is known about one project file. */
export type ProjectFile =
  | { state: "absent" }
  | { state: "untrusted"; file: string }
  | { state: "trusted"; file: string; text: string };

interface _Store {
  files: Record<string, { sha256: string; trusted_at: string }>;
}

/**
 * Read `dir/name` once and say whether it is trusted. Throws a
 * {@link ConfigError} (one line, with the command that trusts it again)
 * when it changed since it was trusted. Anything but a regular file (an
 * empty folder a sandbox's mount left) counts as absent.
 */
export async function projectFile(dir: string, name: string): Promise<ProjectFile> {
  const path = join(dir, name);
  let real: string;
  let bytes: Uint8Array;
  try {
    real = await Deno.realPath(path);
    if (!(await Deno.stat(real)).isFile) return { state: "absent" };
    bytes = await Deno.readFile(real);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { state: "absent" };
    throw new ConfigError(`Cannot read ${path}: ${(err as Error).message}`);
  }
  const known = (await _readStore()).files[real];
  if (!known) return { state: "untrusted", file: path };
  if (known.sha256 !== sha256Hex(bytes)) {
    throw new ConfigError(
      `${path} changed since it was trusted (${known.trusted_at}); review it, then run: ` +
        `corral trust ${path}`,
    );
  }
  return { state: "trusted", file: path, text: new TextDecoder().decode(bytes) };
}

/**
 * Trust `path` as it is now: check that it parses as what its name says
 * (`corral.json` or `permissions.json`), then record its hash. Returns the
 * real path and the hash.
 */
export async function trustFile(
  path: string,
  workspace: string,
): Promise<{ file: string; sha256: string }> {
  const name = path.split("/").pop();
  if (name !== "corral.json" && name !== "permissions.json") {
    throw new ConfigError(
      `corral trust takes corral.json or permissions.json files, got "${path}"`,
    );
  }
  let real: string;
  let bytes: Uint8Array;
  try {
    real = await Deno.realPath(path);
    bytes = await Deno.readFile(real);
  } catch (err) {
    throw new ConfigError(`Cannot trust ${path}: ${(err as Error).message}`);
  }
  const text = new TextDecoder().decode(bytes);
  await readyJsonc(text);
  if (name === "corral.json") parseConfig(text, path);
  else parsePolicy(text, path, workspace);
  const store = await _readStore();
  const digest = sha256Hex(bytes);
  store.files[real] = { sha256: digest, trusted_at: new Date().toISOString() };
  await _writeStore(store);
  return { file: real, sha256: digest };
}

/** The trusted `corral.json` of `workspace`, parsed from the text that was checked. */
export async function trustedConfig(
  workspace: string,
): Promise<(CorralConfig & { ignored?: string }) | undefined> {
  const f = await projectFile(workspace, "corral.json");
  if (f.state !== "trusted") return undefined;
  await readyJsonc(f.text);
  return parseConfig(f.text, f.file);
}

/** The trusted `permissions.json` of `workspace`, parsed from the text that was checked. */
export async function trustedPolicy(workspace: string): Promise<Policy | undefined> {
  const f = await projectFile(workspace, "permissions.json");
  if (f.state !== "trusted") return undefined;
  await readyJsonc(f.text);
  return parsePolicy(f.text, f.file, workspace);
}

function _storePath(): string {
  return join(configDir(), TRUST_STORE);
}

async function _readStore(): Promise<_Store> {
  let text: string;
  try {
    text = await Deno.readTextFile(_storePath());
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { files: {} };
    throw new ConfigError(`Cannot read ${_storePath()}: ${(err as Error).message}`);
  }
  try {
    const data = JSON.parse(text) as Partial<_Store>;
    if (!data.files || typeof data.files !== "object") throw new Error("no files");
    return { files: data.files };
  } catch (err) {
    throw new ConfigError(
      `${_storePath()} is not corral's trust store (${(err as Error).message}): ` +
        `remove it and run corral trust again`,
    );
  }
}

async function _writeStore(store: _Store): Promise<void> {
  const path = _storePath();
  await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  // Written whole and renamed into place: a reader never sees half a store.
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify(store, null, 2) + "\n", { mode: 0o600 });
  await Deno.rename(tmp, path);
}
