/**
 * The jail's second wall at start: the compiled filter for a set of granted
 * syscalls, found in corral's cache (part of the trust base: no tool writes
 * there) and checked against the hashes recorded when it was built, or
 * built now (./builder.ts), proven against the rules (./check_filter.ts)
 * and kept. Once per process and set. Where it cannot be had, it throws an
 * Error that names the cause; the caller fails closed (a sandbox that needs
 * the jail does not start) unless the operator opted out (`"seccomp":
 * "off"`).
 *
 * @module
 */
import { dirname, join } from "node:path";
import { BUILDER_SOURCE, libRules, runBuilder, SYSTEM_PYTHON } from "./builder.ts";
import { checkedNames, filterProblems } from "./check_filter.ts";
import { refusedSyscalls, SECCOMP_RULES, USERNS_SYSCALLS } from "./rules.ts";

/** A compiled filter, ready for bwrap (core/jail/namespace.ts `NamespaceSpec.seccomp`). */
export interface JailFilter {
  /** The programs, loaded in this order (`--add-seccomp-fd`). */
  files: readonly string[];
  /** A granted syscall keeps user namespaces possible: no `--disable-userns`. */
  userns: boolean;
  /** The refused syscalls this filter lets through (granted in permissions.json). */
  except: readonly string[];
}

/** Where filters are kept and made. */
export interface SecondWallOptions {
  /** The folder of compiled filters (in corral's cache or config directory). */
  dir: string;
  /** The Python that runs the builder (default `CORRAL_SECCOMP_PYTHON`, else `/usr/bin/python3`). */
  python?: string;
  /** The architecture (default: this machine's). */
  arch?: string;
}

/** Raised when the filter cannot be had; its message names the cause. */
export class SeccompMissingError extends Error {
  override name = "SeccompMissingError";
}

/** What a filter's folder records of it, written once it was proven. */
interface _Record {
  v: number;
  arch: string;
  except: string[];
  sha256: string[];
  /** Syscall numbers libseccomp knew (the highest: newer ones answer ENOSYS). */
  known: number;
  highest: number;
}

/** Bumped when the check changes: every filter is proven again. */
const _CHECK_VERSION = 1;
const _FILES = ["known.bpf", "refuse.bpf"];

const _made = new Map<string, Promise<JailFilter>>();
let _first: JailFilter | undefined;

/**
 * The filter that refuses what ./rules.ts says except the syscalls `except`
 * (validated names: core/config/policy_schema.ts). Throws a
 * {@link SeccompMissingError} naming the cause when it cannot be had.
 *
 * @example
 * ```ts ignore
 * const f = await jailFilter([], { dir: "/root/.cache/corral/seccomp" });
 * // f.files: [".../known.bpf", ".../refuse.bpf"], loaded by the launcher (core/jail/launcher.ts)
 * ```
 */
export async function jailFilter(
  except: readonly string[],
  options: SecondWallOptions,
): Promise<JailFilter> {
  const granted = [...new Set(except)].sort();
  const unknown = granted.filter((n) => !refusedSyscalls().includes(n));
  if (unknown.length) throw new TypeError(`no rule refuses ${unknown.join(", ")}`);
  const arch = options.arch ?? Deno.build.arch;
  const python = options.python ?? _envPython() ?? SYSTEM_PYTHON;
  const key = `${options.dir}\0${arch}\0${python}\0${granted.join(",")}`;
  const known = _made.get(key);
  if (known) {
    // Made before in this process: used while its files are still the ones proven.
    const f = await known.catch(() => undefined);
    if (f && await _holds(dirname(f.files[0]), f.files)) return f;
    if (_made.get(key) === known) _made.delete(key);
  }
  let p = _made.get(key);
  if (!p) {
    _made.set(key, p = _load(granted, options.dir, arch, python));
    // A failure is tried again by the next start, not remembered.
    p.then((f) => {
      if (!granted.length) _first ??= f;
    }, () => _made.delete(key));
  }
  return await p;
}

/**
 * The filter without exceptions that this process made or found first (for
 * corral's own jailed processes: the tree applier), or undefined when none
 * could be had.
 */
export function processFilter(): Promise<JailFilter | undefined> {
  return Promise.resolve(_first);
}

async function _load(
  except: string[],
  dir: string,
  arch: string,
  python: string,
): Promise<JailFilter> {
  const key = (await _sha256(
    JSON.stringify([_CHECK_VERSION, arch, except, SECCOMP_RULES, BUILDER_SOURCE]),
  )).slice(0, 32);
  const folder = join(dir, key);
  const files = _FILES.map((f) => join(folder, f));
  const filter: JailFilter = {
    files,
    userns: except.some((n) => USERNS_SYSCALLS.includes(n)),
    except,
  };
  if (await _holds(folder, files)) return filter;
  let built;
  try {
    built = await runBuilder(arch, libRules(SECCOMP_RULES, except), checkedNames(arch), python);
  } catch (err) {
    throw new SeccompMissingError((err as Error).message);
  }
  const problems = filterProblems(built, except, arch);
  if (problems.length) {
    throw new SeccompMissingError(
      `the filter libseccomp compiled does not do what core/seccomp/rules.ts says ` +
        `(${problems.slice(0, 3).join("; ")})`,
    );
  }
  const bytes = [built.known, built.refuse];
  try {
    Deno.mkdirSync(folder, { recursive: true, mode: 0o700 });
    bytes.forEach((b, i) => _put(files[i], b));
    const record: _Record = {
      v: _CHECK_VERSION,
      arch,
      except,
      sha256: await Promise.all(bytes.map(_sha256)),
      known: built.table.length,
      highest: Math.max(...built.table),
    };
    _put(join(folder, "filter.json"), new TextEncoder().encode(JSON.stringify(record)));
  } catch (err) {
    throw new SeccompMissingError(`it cannot be kept in ${folder} (${(err as Error).message})`);
  }
  return filter;
}

/** The kept filter is exactly what was proven (its record's hashes). */
async function _holds(folder: string, files: readonly string[]): Promise<boolean> {
  try {
    const r = JSON.parse(Deno.readTextFileSync(join(folder, "filter.json"))) as _Record;
    if (r.v !== _CHECK_VERSION) return false;
    const found = await Promise.all(files.map((f) => _sha256(Deno.readFileSync(f))));
    return found.every((h, i) => h === r.sha256[i]);
  } catch {
    return false;
  }
}

/**
 * SHA-256 in hex by WebCrypto: Deno's native digest, with no module to load
 * (a script hash, core/base/sha256_hex.ts, runs its code once, never
 * optimised: a cold start paid 10–25 ms for these few KiB). Same hashes, so
 * kept filters stay valid.
 */
async function _sha256(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : new Uint8Array(data);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Written whole or not at all: a file beside it, renamed. */
function _put(path: string, bytes: Uint8Array): void {
  const tmp = `${path}.${crypto.randomUUID()}.tmp`;
  Deno.writeFileSync(tmp, bytes, { mode: 0o600 });
  Deno.renameSync(tmp, path);
}

function _envPython(): string | undefined {
  try {
    return Deno.env.get("CORRAL_SECCOMP_PYTHON") || undefined;
  } catch {
    return undefined;
  }
}
