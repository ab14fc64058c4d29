/**
 * No subprocess of a sandbox reads or writes its runtime: the deno binary
 * a namespaced sandbox runs is an execute-only copy (mode 0111) of the
 * host's, in corral's code store, bound read-only over the runtime's own
 * path inside the namespace; and the namespace's first process (pid 1,
 * which holds the sandbox's stdin and stdout pipes) is not bwrap's reaper
 * but an execute-only copy of `/bin/sh` (bound over it: in an `x` tool's
 * namespace `sh` is that copy too) that starts the runtime with those
 * pipes, closes its own, and reaps orphans until the runtime exits.
 *
 * Why: the kernel marks a process non-dumpable when it execs a binary it
 * cannot read. Inside the namespace every capability is dropped, so no
 * process there, root of the user namespace or not, can read them: both
 * processes are non-dumpable, and `/proc/<pid>/mem`, `maps`, `environ`,
 * `fd/*`, `ptrace` and `process_vm_readv` on them fail for every
 * subprocess of the sandbox (EACCES/EPERM). A tool's subprocess can read
 * neither the frame token nor a call's arguments, nor write to the pipe
 * the host reads. Deno starts from such a copy and `Deno.execPath()` works
 * (checked with Deno 2.9.6, bubblewrap 0.8.0, Linux 6.18).
 *
 * A compiled corral binary reads its own file (its embedded code) and is
 * not copied: see docs/security.md, "Single binary".
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import { codeStoreDir } from "../config/mod.ts";

/** Mode of the copy: execute only, for everyone (no read, no write). */
const _MODE = 0o111;

const _made = new Map<string, string>();

/**
 * The execute-only copy of the binary `exec` (made when missing or not as expected:
 * a regular file of ours, mode 0111, the size of the original). Throws,
 * naming the path, when it cannot be made.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sealedRuntime } from "./sealed_runtime.ts";
 * const copy = sealedRuntime(Deno.execPath());
 * assert.equal(Deno.statSync(copy).mode! & 0o777, 0o111);
 * ```
 */
export function sealedRuntime(exec: string): string {
  const src = Deno.statSync(exec);
  const known = _made.get(exec);
  if (known && _fits(known, src)) return known;
  const copy = join(codeStoreDir(), "runtime", _key(exec, src), basename(exec));
  if (!_fits(copy, src)) _copy(exec, copy);
  _made.set(exec, copy);
  return copy;
}

/**
 * The namespace's first process: the host's `/bin/sh` (its real path),
 * whose execute-only copy is bound over it. A path that is always there, or
 * can be made there, whatever the grant binds over `/`, `/tmp` or `/usr`.
 */
export function sandboxInit(): string {
  return Deno.realPathSync("/bin/sh");
}

// pid 1: the runtime gets the pipes (fd 3 carries stdin past the /dev/null a
// background job gets), pid 1 keeps none of them, reaps, and exits with the runtime.
const _INIT = 'exec 3<&0; "$@" <&3 3<&- & p=$!; exec 0</dev/null 1>/dev/null 3<&-; wait "$p"';

/**
 * What seals a namespace: bwrap arguments (the execute-only runtime over
 * `exec`, the execute-only shell over `/bin/sh`'s real path, run as pid 1)
 * and the command that runs before the runtime's own
 * (`[...command, exec, ...args]`). Not `required` (the sandbox may run no
 * program): nothing to seal against, so no seal when the copies cannot be
 * made.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sandboxInit, sealedNamespace } from "./sealed_runtime.ts";
 * const s = sealedNamespace(Deno.execPath());
 * assert.ok(s.bwrap.includes("--as-pid-1") && s.bwrap.includes(Deno.execPath()));
 * assert.equal(s.command[0], sandboxInit());
 * ```
 */
export function sealedNamespace(
  exec: string,
  required = true,
): { bwrap: string[]; command: string[] } {
  const sh = sandboxInit();
  // A sandbox that may run no program (no `x`) has no subprocess to keep out of its
  // runtime: where the copies cannot be made (a host without write access to corral's code
  // store), it runs the runtime as it is, rather than not at all.
  if (!required) {
    try {
      sealedRuntime(exec);
      sealedRuntime(sh);
    } catch {
      return { bwrap: [], command: [] };
    }
  }
  return {
    bwrap: [
      "--as-pid-1",
      // The shell gives a background job /dev/null: one that works even when a grant
      // binds the host's /dev (read-only binds are nodev).
      "--dev-bind",
      "/dev/null",
      "/dev/null",
      "--ro-bind",
      sealedRuntime(exec),
      exec,
      "--ro-bind",
      sealedRuntime(sh),
      sh,
    ],
    command: [sh, "-c", _INIT, "corral-init"],
  };
}

let _ahead: Promise<void> | undefined;

/**
 * Make the copies ahead of the first sandbox, off the main thread (a copy
 * of the deno binary is some 100 MB); no error: the first start reports it.
 * {@link sealedRuntimeReady} waits for it.
 */
export function prepareSealedRuntime(exec: string): Promise<void> {
  return _ahead ??= Promise.all([exec, sandboxInit()].map(_copyAhead)).then(() => {}, () => {});
}

/** Resolves once copies started by {@link prepareSealedRuntime} are made (or failed). */
export function sealedRuntimeReady(): Promise<void> {
  return _ahead ?? Promise.resolve();
}

async function _copyAhead(exec: string): Promise<void> {
  const src = await Deno.stat(exec);
  const copy = join(codeStoreDir(), "runtime", _key(exec, src), basename(exec));
  if (_fits(copy, src)) return;
  const tmp = join(dirname(copy), `.deno-${crypto.randomUUID()}`);
  try {
    await Deno.mkdir(dirname(copy), { recursive: true, mode: 0o700 });
    await Deno.copyFile(exec, tmp);
    await Deno.chmod(tmp, _MODE);
    await Deno.rename(tmp, copy);
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}

/** The copy of one binary version: its path, size and modification time. */
function _key(exec: string, st: Deno.FileInfo): string {
  const text = `${exec}\0${st.size}\0${st.mtime?.getTime() ?? 0}\0${st.ino ?? 0}`;
  let h = 0x811c9dc5; // FNV-1a, 32 bits twice: a name, not a check (the copy is checked)
  let g = 0x01000193;
  for (let i = 0; i < text.length; i++) {
    h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
    g = Math.imul(g ^ text.charCodeAt(i), 0x811c9dc5) >>> 0;
  }
  return h.toString(16).padStart(8, "0") + g.toString(16).padStart(8, "0");
}

function _fits(copy: string, src: Deno.FileInfo): boolean {
  try {
    const st = Deno.lstatSync(copy);
    return st.isFile && (st.mode! & 0o7777) === _MODE && st.size === src.size &&
      st.uid === Deno.uid();
  } catch {
    return false;
  }
}

function _copy(exec: string, copy: string): void {
  const dir = dirname(copy);
  const tmp = join(dir, `.deno-${crypto.randomUUID()}`);
  try {
    Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
    Deno.copyFileSync(exec, tmp);
    Deno.chmodSync(tmp, _MODE);
    Deno.renameSync(tmp, copy);
  } catch (err) {
    try {
      Deno.removeSync(tmp);
    } catch { /* not made */ }
    throw new Error(
      `cannot make the execute-only copy of the deno runtime at ${copy} ` +
        `(${(err as Error).message}); it keeps a sandbox's memory from its subprocesses`,
    );
  }
}
