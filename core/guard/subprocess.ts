/**
 * Run a command for a tool: a clean environment, a time limit, a cap on
 * each output stream, and cancellation.
 *
 * Environment: never the host's. Inside a sandbox the worker cannot read
 * env at all, so the host passes the values of the allowlisted variables
 * (PATH, LANG, TERM and the names the policy's `env` lists) with each call,
 * and the sandbox hands them here ({@link configureSubprocesses}).
 *
 * Confinement: in a process sandbox the command runs inside the sandbox's
 * namespace (core/jail/namespace.ts) like everything else there: it sees
 * exactly the grant's mounts. Deno's run list decides which commands start.
 *
 * Killing: the child is started `detached` (its own session and process
 * group, set by Deno itself, no `setsid` binary needed). At the limit the
 * whole group gets SIGKILL when the sandbox may signal any process
 * (`Deno.kill(-pid)` needs unscoped `--allow-run`); a sandbox granted only
 * some commands may signal just the child: grandchildren it started in
 * the background (`sleep 100 &`) then survive the call, inside the sandbox,
 * until the sandbox ends (a process sandbox is killed whole when a call or
 * one of its processes times out). Open pipes do not hold the call: output
 * reading stops shortly after the child ends.
 *
 * @module
 */
import type { Grant } from "../tool/mod.ts";
import { proxyVars } from "./egress_env.ts";

/** What the sandbox knows about the processes its tools start. */
export interface SubprocessDefaults {
  /** Values of the allowlisted variables, read by the host. */
  vars?: Record<string, string>;
  /** The grant of the tools in this sandbox. */
  grant?: Grant;
  /** HOME of subprocesses (inside the namespace: a folder on its private /tmp). */
  home?: string;
  /** The egress proxy URL: subprocesses get the proxy variables (core/egress/egress.ts). */
  proxy?: string;
}

let _defaults: SubprocessDefaults = {};

/**
 * Set what {@link runSubprocess} uses when its options do not say: the
 * environment values, the grant and HOME. The sandbox
 * worker calls this before each call; tools do not need to.
 *
 * @example
 * ```ts
 * import { configureSubprocesses } from "./subprocess.ts";
 * configureSubprocesses({ vars: { PATH: "/usr/bin:/bin" } });
 * configureSubprocesses({});
 * ```
 */
export function configureSubprocesses(defaults: SubprocessDefaults): void {
  _defaults = { ...defaults };
}

/** Options of {@link runSubprocess}. */
export interface SubprocessOptions {
  /** Command to run (a name looked up on PATH, or a path). */
  command: string;
  /** Its arguments. */
  args: string[];
  /** Working directory. */
  cwd: string;
  /** Text written to its standard input, then closed. Default: no input. */
  stdin?: string;
  /** Kill it (SIGKILL) after this many milliseconds. */
  timeoutMs: number;
  /** Keep at most this many bytes of stdout and of stderr each. */
  maxOutputBytes: number;
  /** Kill it when this signal aborts. */
  signal?: AbortSignal;
  /** Extra environment variables, on top of the allowlisted ones. */
  env?: Record<string, string>;
}

/** What {@link runSubprocess} returns. */
export interface SubprocessResult {
  /** Exit code; 128 + signal number when killed by a signal. */
  exitCode: number;
  /** Standard output, decoded as UTF-8, capped. */
  stdout: string;
  /** Standard error, decoded as UTF-8, capped. */
  stderr: string;
  /** It was killed at the time limit. */
  timedOut: boolean;
  /** It was killed because `signal` aborted. */
  aborted: boolean;
  /** stdout or stderr was cut at `maxOutputBytes`. */
  truncated: boolean;
}

/** PATH used when the host's cannot be read. */
export const DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";

/** How long to wait for output pipes after the child has ended (ms). */
const _PIPE_GRACE_MS = 200;

/**
 * Run a command and collect its output. Never inherits the host's
 * environment: only PATH, LANG and TERM (the values the host passed to the
 * sandbox, else the host's own when readable, else defaults), the policy's
 * `env` names (passed by the host), HOME (a fresh scratch directory,
 * removed afterwards, or `cwd` when none can be made; in the namespace, a
 * directory on its private /tmp) and `env`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runSubprocess } from "./subprocess.ts";
 * const r = await runSubprocess({
 *   command: "bash", args: ["-c", "echo hi"], cwd: Deno.cwd(),
 *   timeoutMs: 5000, maxOutputBytes: 1000,
 * });
 * assert.ok(r.exitCode === 0 && r.stdout === "hi\n");
 * ```
 */
export async function runSubprocess(options: SubprocessOptions): Promise<SubprocessResult> {
  const vars = _defaults.vars ?? {};
  const base = {
    PATH: vars.PATH ?? _hostEnv("PATH") ?? DEFAULT_PATH,
    LANG: vars.LANG ?? _hostEnv("LANG") ?? "C.UTF-8",
    TERM: vars.TERM ?? _hostEnv("TERM") ?? "dumb",
  };
  const scratch = _defaults.home ? undefined : await _scratchDir();
  const env: Record<string, string> = {
    ...vars,
    ...base,
    HOME: _defaults.home ?? scratch ?? options.cwd,
    ...(_defaults.proxy ? proxyVars(_defaults.proxy) : {}),
    ...options.env,
  };
  try {
    return await _run(options, env);
  } finally {
    if (scratch) await Deno.remove(scratch, { recursive: true }).catch(() => {});
  }
}

async function _run(
  options: SubprocessOptions,
  env: Record<string, string>,
): Promise<SubprocessResult> {
  if (options.signal?.aborted) {
    return {
      exitCode: 130,
      stdout: "",
      stderr: "",
      timedOut: false,
      aborted: true,
      truncated: false,
    };
  }
  const child = new Deno.Command(options.command, {
    args: options.args,
    cwd: options.cwd,
    env,
    clearEnv: true,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    detached: true,
  }).spawn();

  let timedOut = false;
  let aborted = false;
  const kill = () => _killTree(child);
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, Math.max(0, options.timeoutMs));
  const onAbort = () => {
    aborted = true;
    kill();
  };
  options.signal?.addEventListener("abort", onAbort, { once: true });

  const out = new _Capped(child.stdout.getReader(), options.maxOutputBytes);
  const err = new _Capped(child.stderr.getReader(), options.maxOutputBytes);
  const reading = Promise.all([out.done, err.done]);

  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    // A child that exits without reading its input closes the pipe: ignore.
    writer.write(new TextEncoder().encode(options.stdin))
      .then(() => writer.close())
      .catch(() => {});
  }

  let status: Deno.CommandStatus;
  try {
    status = await child.status;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }
  // Grandchildren may keep the pipes open; stop reading after a short grace.
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<"late">((res) => {
    graceTimer = setTimeout(() => res("late"), _PIPE_GRACE_MS);
  });
  const late = await Promise.race([reading, grace]);
  clearTimeout(graceTimer);
  if (late === "late") {
    out.cancel();
    err.cancel();
    await reading;
  }
  return {
    exitCode: status.code,
    stdout: out.text(),
    stderr: err.text(),
    timedOut,
    aborted: aborted && !timedOut,
    truncated: out.dropped > 0 || err.dropped > 0,
  };
}

function _killTree(child: Deno.ChildProcess): void {
  try {
    Deno.kill(-child.pid, "SIGKILL"); // the whole group: needs unscoped --allow-run
    return;
  } catch {
    // fall through: only the child
  }
  try {
    child.kill("SIGKILL");
  } catch {
    // already gone
  }
}

/** Reads a stream to the end, keeping the first `max` bytes. */
class _Capped {
  readonly done: Promise<void>;
  dropped = 0;
  #chunks: Uint8Array[] = [];
  #kept = 0;
  #reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(reader: ReadableStreamDefaultReader<Uint8Array>, readonly max: number) {
    this.#reader = reader;
    this.done = this.#pump();
  }

  async #pump(): Promise<void> {
    try {
      while (true) {
        const { done, value } = await this.#reader.read();
        if (done) return;
        const room = Math.max(0, this.max - this.#kept);
        if (value.length <= room) {
          this.#chunks.push(value);
          this.#kept += value.length;
        } else {
          if (room > 0) this.#chunks.push(value.subarray(0, room));
          this.#kept += room;
          this.dropped += value.length - room;
        }
      }
    } catch {
      // cancelled or broken pipe: keep what was read
    }
  }

  cancel(): void {
    this.#reader.cancel().catch(() => {});
  }

  text(): string {
    const all = new Uint8Array(this.#kept);
    let at = 0;
    for (const c of this.#chunks) {
      all.set(c, at);
      at += c.length;
    }
    const text = new TextDecoder().decode(all);
    return this.dropped > 0 ? `${text}\n…[truncated ${this.dropped} bytes]` : text;
  }
}

function _hostEnv(name: string): string | undefined {
  try {
    const v = Deno.env.get(name);
    return v === "" ? undefined : v;
  } catch {
    return undefined; // no env permission in this sandbox
  }
}

async function _scratchDir(): Promise<string | undefined> {
  try {
    return await Deno.makeTempDir({ prefix: "corral-home-" });
  } catch {
    return undefined; // no write permission for the temp folder
  }
}
