/**
 * A hosted server's own command line and what its namespace must bind for
 * it: an npm package under `deno run` whose `--allow-*` flags are its grant
 * (`--cached-only --frozen` against its own lock); a PyPI package's program
 * run by its venv's python3; or any command, whose absolute paths are bound
 * read-only. A command that is a Python venv's interpreter or one of its
 * scripts gets the venv and its base interpreter bound, read-only.
 *
 * @module
 */
import { dirname, isAbsolute, join } from "node:path";
import type { SandboxPolicy, ServerEntry } from "../config/mod.ts";
import { compiledCorral, denoProgram, pathExists } from "../base/mod.ts";
import type { Grant } from "../tool/mod.ts";
import type { InstallRecord } from "./install.ts";

/** A server's command and what it needs mounted. */
export interface ServerCommand {
  command: string[];
  /** Bound read-only (its code, its runtime). */
  code: string[];
  /** Its own Deno cache (npm). */
  denoDir?: string;
  /** Whether it gets the system runtime (`/usr`, `/bin`, `/lib*`, a minimal `/etc`). */
  system: boolean;
  /** Folders put first on its PATH (a venv's `bin`). */
  path?: string[];
}

/**
 * Why server `entry` cannot run here, when it is an npm server and this is a
 * compiled corral with no Deno on PATH (an npm server runs under a real
 * `deno run`), with what to do; else undefined. `corral list` shows it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { npmDenoMissing } from "./server_command.ts";
 * const npm = { kind: "npm" } as never;
 * assert.equal(npmDenoMissing(npm), undefined); // under deno run: this Deno
 * assert.match(npmDenoMissing(npm, true, "/nonexistent")!, /needs Deno on PATH.*npm install -g deno/);
 * assert.equal(npmDenoMissing({ kind: "command" } as never, true, "/nonexistent"), undefined);
 * ```
 */
export function npmDenoMissing(
  entry: ServerEntry,
  compiled: boolean = compiledCorral(),
  path?: string,
): string | undefined {
  if (entry.kind !== "npm") return undefined;
  const deno = path === undefined ? denoProgram(compiled) : denoProgram(compiled, path);
  return typeof deno === "string" ? undefined : deno.missing;
}

/** The `deno` an npm server runs under: this one, or in a binary the one on PATH (else throws). */
function _deno(): string {
  const deno = denoProgram();
  if (typeof deno !== "string") throw new Error(deno.missing);
  return deno;
}

/** The folders of the system runtime: bound already, never again as code. */
const _SYSTEM = /^\/(usr|bin|sbin|lib\w*)(\/|$)/;

/** The server's own command line and what it needs mounted. */
export function serverCommand(
  entry: ServerEntry,
  record: InstallRecord | undefined,
  g: Grant,
  p: SandboxPolicy,
  workspace: string,
): ServerCommand {
  const args = entry.args.map((a) => a.replaceAll("${workspace}", workspace));
  if (entry.kind === "npm" && record) return _npm(entry, record, g, p, args);
  if (p.sys?.length) {
    throw new Error(
      `"sys" in ${p.where} of ${
        p.file ?? "permissions.json"
      } applies only to npm servers (Deno's --allow-sys)`,
    );
  }
  if (entry.kind === "pypi" && record) {
    const program = isAbsolute(entry.command[0])
      ? entry.command[0]
      : join(record.dir, "bin", entry.command[0]);
    // A program outside the venv (a script the operator names) is bound read-only too.
    const own = program.startsWith(record.dir + "/") || !pathExists(program) ? [] : [program];
    return {
      command: [join(record.dir, "bin", "python3"), program, ...entry.command.slice(1), ...args],
      code: [record.dir, ...(record.pythonHome ? [record.pythonHome] : []), ...own],
      system: true,
    };
  }
  const [program, ...rest] = entry.command;
  const resolved = _which(program);
  const venv = venvOf(resolved);
  // Absolute paths of the command line that exist are its code: bound read-only.
  // (the system runtime is bound already: /usr, /bin, /lib…). A venv is bound whole.
  const code = [resolved, ...rest].filter((a) =>
    isAbsolute(a) && pathExists(a) && !_SYSTEM.test(a) && !(venv && a.startsWith(venv.dir + "/"))
  );
  return {
    command: [resolved, ...rest, ...args],
    code: [...(venv ? [venv.dir, ...venv.runtime] : []), ...code],
    system: true,
    ...(venv ? { path: [join(venv.dir, "bin")] } : {}),
  };
}

function _npm(
  entry: ServerEntry,
  record: InstallRecord,
  g: Grant,
  p: SandboxPolicy,
  args: string[],
): ServerCommand {
  // `"*"` in a net list is every host (Deno takes no `*` host): the proxy still checks each.
  const flag = (name: string, l: string[]) =>
    name === "net" && l.includes("*")
      ? ["--allow-net"]
      : l.length
      ? [`--allow-${name}=${[...new Set(l)].join(",")}`]
      : [];
  const deno = _deno();
  return {
    command: [
      deno,
      "run",
      "--no-prompt",
      "--cached-only",
      "--frozen",
      "--no-config",
      `--lock=${record.lock}`,
      // Its own installed packages too (mounted read-only): jsdom reads its stylesheet at start.
      ...flag("read", [...g.read, join(record.dir, "npm")]),
      ...flag("write", g.write),
      ...flag("run", g.run),
      ...flag("net", g.net),
      // What it may learn of the machine: only the names permissions.json lists.
      ...flag("sys", p.sys ?? []),
      // The environment is already only what the entry names.
      "--allow-env",
      `--v8-flags=--max-old-space-size=${p.memory_mb}`,
      `npm:${entry.package}@${entry.version}`,
      ...args,
    ],
    // A compiled corral runs it under the Deno on PATH: bound too (corral's own is bound already).
    code: [record.lock!, ...(compiledCorral() ? [deno] : [])],
    denoDir: record.dir,
    system: g.run.length > 0,
  };
}

/**
 * The Python venv a program belongs to (`VENV/bin/python`, or a script in
 * `VENV/bin`, the folder above holding `pyvenv.cfg`), and the base
 * interpreter's installation it runs on (its `home`'s parent), unless that is
 * the system runtime.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { venvOf } from "./server_command.ts";
 * const dir = Deno.makeTempDirSync();
 * Deno.mkdirSync(`${dir}/bin`);
 * Deno.writeTextFileSync(`${dir}/pyvenv.cfg`, "home = /opt/py/3.12/bin\nversion = 3.12\n");
 * assert.deepEqual(venvOf(`${dir}/bin/python`), { dir, runtime: ["/opt/py/3.12"] });
 * assert.equal(venvOf("/usr/bin/python3"), undefined);
 * ```
 */
export function venvOf(program: string): { dir: string; runtime: string[] } | undefined {
  if (!isAbsolute(program) || dirname(program).split("/").pop() !== "bin") return undefined;
  const dir = dirname(dirname(program));
  let cfg: string;
  try {
    cfg = Deno.readTextFileSync(join(dir, "pyvenv.cfg"));
  } catch {
    return undefined;
  }
  const home = /^\s*home\s*=\s*(.+?)\s*$/m.exec(cfg)?.[1];
  if (!home || !isAbsolute(home)) return { dir, runtime: [] };
  let base = dirname(home);
  try {
    base = dirname(Deno.realPathSync(home));
  } catch { /* not here: as written */ }
  return { dir, runtime: _SYSTEM.test(base + "/") ? [] : [base] };
}

function _which(program: string): string {
  if (isAbsolute(program)) return program;
  for (const d of ["/usr/local/bin", "/usr/bin", "/bin"]) {
    if (pathExists(join(d, program))) return join(d, program);
  }
  if (program === "deno") return _deno();
  throw new Error(`command "${program}" was not found in /usr/local/bin, /usr/bin or /bin`);
}
