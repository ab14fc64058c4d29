/**
 * The programs corral starts from its own code, and how: under `deno run`
 * each is `deno run … FILE`; in a compiled corral (`deno compile`), where
 * `Deno.execPath()` is corral itself and corral's files exist only inside
 * it, each is the binary re-run with a hidden subcommand that main.ts
 * dispatches before anything else. Nothing is started as `deno run FILE`
 * from the install folder when corral is compiled.
 *
 * A file that must exist on disk inside a namespace for a program corral
 * does not run itself (the `--preload` of an npm server run by a real
 * `deno run`) is written from corral's own copy (embedded in a binary)
 * into corral's code store ({@link writeSelfFiles}). What truly needs a Deno on PATH
 * in a binary (npm servers, `deno cache` of installs) asks
 * {@link denoProgram}, which says what to do when there is none.
 *
 * tests/e2e/cli/self_run_test.ts walks corral's code for every file loaded or
 * started by path at run time and checks each is started through the
 * binary, embedded (core/cli/compile.ts `compileIncludes`) or written out.
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import { fileStamp } from "./file_stamp.ts";
import { sha256Hex } from "./sha256_hex.ts";

/** The hidden subcommands, each with the module main.ts runs for it. */
export const SELF_PROGRAMS = {
  /** A process sandbox (core/sandbox/sandbox_child.ts). */
  "__sandbox-child": "core/sandbox/sandbox_child.ts",
  /** The process that writes settled changes into a write root (core/layers/tree_applier.ts). */
  "__applier": "core/layers/tree_applier.ts",
  /** A hosted server's way out of its namespace (core/hosted/egress_bridge.ts). */
  "__egress-bridge": "core/hosted/egress_bridge.ts",
} as const;

/**
 * corral's own files written out of it (into its code store, by
 * {@link writeSelfFiles}) for a program that is not corral to load: embedded
 * in a binary (core/cli/compile.ts), by what needs them.
 */
export const WRITTEN_OUT = {
  /** An npm server's `deno run --preload` (core/hosted/server_egress.ts). */
  "egress-preload": ["core/egress/forward_direct.ts", "core/egress/egress_forward.ts"],
  /**
   * The shell programs corral runs by path ({@link shellProgram}), each beside the code that
   * runs it: the namespace's launcher and its second stage (../jail/launcher.ts), the limits' probe,
   * join and release (../jail/limits.ts), the sweep of gone sandboxes' layers
   * (core/layers/layer_dirs.ts) and the look at a running sandbox's processes
   * (core/layers/view_procs.ts), and the memory of a sandbox's processes
   * (./process_memory.ts). `shellcheck` reads each (tests/shellcheck_test.ts).
   */
  "shell": [
    "core/base/process_memory.sh",
    "core/jail/launch.sh",
    "core/jail/launch_stage.sh",
    "core/jail/limits_join.sh",
    "core/jail/limits_probe.sh",
    "core/jail/limits_release.sh",
    "core/layers/layer_sweep.sh",
    "core/layers/view_procs.sh",
  ],
} as const;

/** One of corral's shell programs ({@link WRITTEN_OUT}'s `shell`). */
export type ShellProgram = typeof WRITTEN_OUT["shell"][number];

/** One of {@link SELF_PROGRAMS}. */
export type SelfProgram = keyof typeof SELF_PROGRAMS;

/**
 * Whether this host is a compiled corral binary (`deno compile`): then
 * `Deno.execPath()` is corral itself, not `deno`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { compiledCorral } from "./self_run.ts";
 * assert.equal(compiledCorral(), false); // under `deno run` / `deno test`
 * ```
 */
export function compiledCorral(): boolean {
  return !/^deno(\.exe)?$/.test(basename(Deno.execPath()));
}

/** corral's install folder (the folder of main.ts), from this file's place. */
const _ROOT = new URL("../..", import.meta.url).pathname;

/**
 * The command line of corral's program `name`, run by `exec` (the runtime
 * as the namespace sees it): `exec name …args` in a compiled corral, else
 * `exec run …flags FILE …args`; and the files of corral's a namespace must
 * bind for it (none in a binary: the binary holds them).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { selfCommand } from "./self_run.ts";
 * const dev = selfCommand("__applier", "/usr/bin/deno", ["--allow-read"], ["x"], false);
 * assert.deepEqual(dev.command.slice(0, 3), ["/usr/bin/deno", "run", "--allow-read"]);
 * assert.ok(dev.command.at(-2)!.endsWith("core/layers/tree_applier.ts"));
 * const bin = selfCommand("__applier", "/opt/corral", ["--allow-read"], ["x"], true);
 * assert.deepEqual(bin, { command: ["/opt/corral", "__applier", "x"], code: [] });
 * ```
 */
export function selfCommand(
  name: SelfProgram,
  exec: string,
  flags: string[],
  args: string[],
  compiled: boolean = compiledCorral(),
): { command: string[]; code: string[] } {
  if (compiled) return { command: [exec, name, ...args], code: [] };
  const file = selfFile(SELF_PROGRAMS[name]);
  return { command: [exec, "run", ...flags, file, ...args], code: [file] };
}

/**
 * The absolute path of corral's own file `rel` (relative to the install
 * folder): on disk under `deno run`, inside the binary when compiled (read
 * it; never hand it to another program).
 */
export function selfFile(rel: string): string {
  return join(_ROOT, rel);
}

/**
 * Copies of corral's own files `rels` (relative to the install folder) in a
 * folder of `store` named by their content, made once (written aside, then
 * renamed into place): for a program that is not corral (a real `deno run`,
 * bash) to load, also in a compiled corral, whose files are not on disk.
 * Their relative imports hold among them. A copy that no longer holds
 * corral's bytes (changed or swapped in the store) is never handed out: the
 * set is written anew. Returns the copy of each, by `rels`' order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { writeSelfFiles } from "./self_run.ts";
 * const store = await Deno.makeTempDir();
 * const [a] = await writeSelfFiles(["core/egress/egress_forward.ts"], store);
 * assert.ok(a.startsWith(store) && a.endsWith("/core/egress/egress_forward.ts"));
 * assert.deepEqual(await writeSelfFiles(["core/egress/egress_forward.ts"], store), [a]);
 * ```
 */
export function writeSelfFiles(rels: readonly string[], store: string): Promise<string[]> {
  return Promise.resolve().then(() => writeSelfFilesSync(rels, store));
}

/** {@link writeSelfFiles}, blocking (a few small files): for a caller that cannot wait. */
export function writeSelfFilesSync(rels: readonly string[], store: string): string[] {
  const texts = rels.map((r) => Deno.readTextFileSync(selfFile(r)));
  const digest = sha256Hex(new TextEncoder().encode(JSON.stringify([rels, texts])));
  const dir = join(store, digest.slice(0, 32));
  const out = rels.map((r) => join(dir, r));
  const same = () => {
    try {
      return out.every((f, i) => Deno.readTextFileSync(f) === texts[i]);
    } catch {
      return false;
    }
  };
  if (same()) return out;
  Deno.mkdirSync(store, { recursive: true, mode: 0o700 });
  const aside = Deno.makeTempDirSync({ dir: store, prefix: ".writing-" });
  try {
    for (const [i, r] of rels.entries()) {
      Deno.mkdirSync(dirname(join(aside, r)), { recursive: true });
      Deno.writeTextFileSync(join(aside, r), texts[i], { mode: 0o644 });
    }
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* not there */ }
    try {
      Deno.renameSync(aside, dir);
    } catch (err) {
      if (!same()) throw err; // another corral made it meanwhile: the same bytes
    }
  } finally {
    try {
      Deno.removeSync(aside, { recursive: true });
    } catch { /* renamed into place */ }
  }
  return out;
}

let _store: string | undefined;

/**
 * Name the folder a compiled corral writes its shell programs out to (its
 * code store's `self` folder: core/cli/cli.ts names it before any command
 * runs; the jail cannot ask core/config/ itself).
 */
export function useSelfStore(dir: string): void {
  _store = dir;
}

/** The copies last checked, per store, with the stamp each had then. */
const _shellCopies = new Map<string, { paths: string[]; stamps: Array<string | undefined> }>();

/**
 * The path a shell runs corral's program `rel` from (`/bin/bash PATH …`):
 * its own file under `deno run`; in a compiled corral, whose files bash
 * cannot read, its copy written out to `store` ({@link writeSelfFilesSync}).
 * A copy is handed out only while every copy of the set still has the
 * stamp it had when its bytes were checked (core/base/file_stamp.ts); a set
 * with one changed or swapped since is checked again, and written anew when
 * it is not corral's. Throws when a
 * compiled corral was given no store ({@link useSelfStore}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { shellProgram } from "./self_run.ts";
 * assert.ok(shellProgram("core/jail/launch.sh", false).endsWith("/core/jail/launch.sh"));
 * const store = await Deno.makeTempDir();
 * const copy = shellProgram("core/jail/launch.sh", true, store);
 * assert.ok(copy.startsWith(store));
 * assert.equal(Deno.readTextFileSync(copy), Deno.readTextFileSync(shellProgram("core/jail/launch.sh", false)));
 * ```
 */
export function shellProgram(
  rel: ShellProgram,
  compiled: boolean = compiledCorral(),
  store: string | undefined = _store,
): string {
  if (!compiled) return selfFile(rel);
  if (!store) {
    throw new Error(
      `Cannot run ${rel}: this compiled corral has no folder to write its shell programs to ` +
        "(useSelfStore was not called)",
    );
  }
  const at = WRITTEN_OUT.shell.indexOf(rel);
  // Every copy of the set, not only this one: a program runs others beside it (launch.sh its stage).
  const known = _shellCopies.get(store);
  if (known?.stamps.every((s, i) => s !== undefined && fileStamp(known.paths[i]) === s)) {
    return known.paths[at];
  }
  const paths = writeSelfFilesSync(WRITTEN_OUT.shell, store);
  _shellCopies.set(store, { paths, stamps: paths.map(fileStamp) });
  return paths[at];
}

/**
 * Permissions a program re-run from the binary does not need: revoked
 * before it does anything (a binary holds the host's flags, fixed at
 * compile time; under `deno run` the flags are already the program's own).
 */
export function dropPermissions(keep: string[]): void {
  for (const name of ["read", "write", "net", "env", "sys", "run", "ffi", "import"]) {
    if (keep.includes(name)) continue;
    try {
      Deno.permissions.revokeSync({ name } as Deno.PermissionDescriptor);
    } catch { /* not revocable here: not held */ }
  }
}

/**
 * The `deno` that runs what needs a real Deno (an npm server's `deno run`,
 * the `deno cache` of an install): this one under `deno run`; in a compiled
 * corral, the `deno` on PATH. Returns the program, or why there is none and
 * how to get it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { denoProgram } from "./self_run.ts";
 * assert.equal(denoProgram(false), Deno.execPath());
 * const none = denoProgram(true, "/nonexistent");
 * assert.ok(typeof none === "object" && /needs Deno on PATH/.test(none.missing));
 * ```
 */
export function denoProgram(
  compiled: boolean = compiledCorral(),
  path: string | undefined = _env("PATH"),
): string | { missing: string } {
  if (!compiled) return Deno.execPath();
  for (const dir of (path ?? "").split(":").filter(Boolean)) {
    const candidate = join(dir, "deno");
    try {
      const real = Deno.realPathSync(candidate);
      if (Deno.statSync(real).isFile && real !== Deno.realPathSync(Deno.execPath())) return real;
    } catch { /* not there */ }
  }
  return {
    missing: "this compiled corral needs Deno on PATH to run npm servers and installs " +
      "(they run under `deno run`, which the binary cannot be): install it " +
      "(`npm install -g deno@2.9.6`, or put a deno binary on PATH), or run corral from " +
      "its source with `deno task corral`",
  };
}

function _env(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}
