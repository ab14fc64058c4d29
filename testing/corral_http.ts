/**
 * corral as a process, as its users start it: the `deno` arguments of
 * `deno task corral`, and a `corral mcp --http` server that has printed
 * its URL.
 *
 * @module
 */
import { HOST_FLAGS } from "../core/sandbox/mod.ts";
import { ROOT } from "./paths.ts";

/** The Deno flags of `deno task corral`: what a user's `corral` process runs with. */
export const CORRAL_FLAGS: string[] = [...HOST_FLAGS];

/** `deno` arguments that run corral as `deno task corral` does (its deno.json named). */
export const CORRAL_ARGS: string[] = [
  "run",
  ...CORRAL_FLAGS,
  "--config",
  `${ROOT}deno.json`,
  `${ROOT}main.ts`,
];

/** A `corral mcp --http` process that has printed its URL on stderr. */
export interface CorralHttp {
  /** The endpoint, e.g. `http://127.0.0.1:41234/mcp`. */
  url: string;
  child: Deno.ChildProcess;
  /** Its process id on the host (its sandboxes are its children). */
  pid: number;
  /** Everything it wrote on stderr so far (its stderr is drained until it ends). */
  stderr(): string;
  /** Kill it at once (SIGKILL), as a crash would, and wait for its end. */
  kill(): Promise<void>;
  /** SIGTERM (once), then wait for its end and the last of its stderr. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** How to start {@link startCorralHttp}'s process. */
export interface CorralHttpOptions {
  /** Added to this process's environment (with `NO_COLOR=1`). */
  env?: Record<string, string>;
  /** Deno flags besides {@link CORRAL_FLAGS} (`--v8-flags=…`). */
  denoFlags?: string[];
  /** Its working folder: the project root unless named. */
  cwd?: string;
}

/**
 * Start `corral mcp ARGS…` (ARGS name `--http`) and resolve once it prints
 * `MCP over Streamable HTTP at URL`; a server that ends first is an Error
 * with all it printed.
 */
export async function startCorralHttp(
  args: string[],
  options: CorralHttpOptions = {},
): Promise<CorralHttp> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...CORRAL_FLAGS,
      ...(options.denoFlags ?? []),
      "--config",
      `${ROOT}deno.json`,
      `${ROOT}main.ts`,
      "mcp",
      ...args,
    ],
    env: { NO_COLOR: "1", ...options.env },
    cwd: options.cwd ?? ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let url: string | undefined;
  while (url === undefined) {
    const { value, done } = await reader.read();
    if (done) {
      await child.status;
      throw new Error(`corral mcp --http ended before listening:\n${text}`);
    }
    text += value;
    url = /Streamable HTTP at (http:\/\/\S+\/mcp)/.exec(text)?.[1];
  }
  // Keep draining stderr so that the child never blocks on a full pipe.
  const drained = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += value;
    }
  })();
  let ended = false;
  return {
    url,
    child,
    pid: child.pid,
    stderr: () => text,
    async kill() {
      ended = true;
      child.kill("SIGKILL");
      await child.status;
    },
    async [Symbol.asyncDispose]() {
      // Once: a caller may end it early and leave the rest to `await using`.
      if (!ended) child.kill("SIGTERM");
      ended = true;
      await child.status;
      await drained;
    },
  };
}
