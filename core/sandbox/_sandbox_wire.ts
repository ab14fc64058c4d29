/**
 * The wire between the host and a running process sandbox: the random
 * frame token and the grant sent first on stdin (before any tool code
 * exists), messages as framed lines on stdout (a line counts only when it
 * carries the token, so tool output cannot forge one), stderr as logs, and
 * the sandbox's end.
 *
 * @module
 */
import { REFUSED_EXIT } from "../jail/mod.ts";
import { FRAME_MARK, type HostMessage, type SandboxMessage } from "./protocol.ts";
import type { Transport, TransportHooks } from "./_transport.ts";

/** What {@link wireChild} needs besides the child. */
export interface WireOptions {
  label: string;
  /** The first message after the token: the grant the child narrows to. */
  hello: unknown;
  /**
   * The token a sandbox started ahead was given with this very hello
   * (./prestart.ts): neither is sent again.
   */
  sent?: string;
  /** Largest line read from the sandbox (the host's own cap on results). */
  lineLimit: number;
  /** How a message is changed before it is sent (PATH as the namespace sees it). */
  outgoing?: (msg: HostMessage) => HostMessage;
  /** Kill what the child started and free what it held (runs once). */
  kill: () => void;
  /** Why it ended, from its status and the end of its stderr; after its limits are released. */
  ended: (status: Deno.CommandStatus, stderrTail: string) => Promise<string>;
}

/**
 * Speak to `child` as a {@link Transport}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { wireChild } from "./_sandbox_wire.ts";
 * const child = new Deno.Command("/bin/cat", { stdin: "piped", stdout: "piped", stderr: "piped" })
 *   .spawn();
 * const logs: string[] = [];
 * let why = "";
 * const t = wireChild(child, {
 *   onMessage: () => {}, onExit: (r) => why = r, onLog: (l) => logs.push(l),
 * }, {
 *   label: "cat", hello: { read: [] }, lineLimit: 1024, kill: () => child.kill(),
 *   ended: async (s) => `exited ${s.code}`,
 * });
 * // cat echoes the hello: a log line, not a frame.
 * for (let i = 0; i < 400 && !logs.some((l) => l.includes('"read":[]')); i++) {
 *   await new Promise((r) => setTimeout(r, 5));
 * }
 * t.kill();
 * await t.ended;
 * assert.ok(logs.some((l) => l.includes('"read":[]')));
 * assert.match(why, /exited/);
 * ```
 */
export function wireChild(
  child: Deno.ChildProcess,
  hooks: TransportHooks,
  o: WireOptions,
): Transport {
  const token = o.sent ?? crypto.randomUUID().replaceAll("-", "");
  const writer = child.stdin.getWriter();
  const enc = new TextEncoder();
  let dead = false;
  const write = (text: string) => {
    if (dead) return;
    writer.write(enc.encode(text)).catch(() => {});
  };
  let ended = () => {};
  const t: Transport = {
    pid: child.pid,
    ended: new Promise<void>((r) => ended = r),
    send: (msg) => write(JSON.stringify(o.outgoing ? o.outgoing(msg) : msg) + "\n"),
    kill: () => {
      if (dead) return;
      dead = true;
      writer.close().catch(() => {});
      o.kill();
    },
  };
  if (!o.sent) write(`${token}\n${JSON.stringify(o.hello)}\n`);
  const mark = FRAME_MARK + token;
  readLines(child.stdout, o.lineLimit, (line) => {
    // The last mark on the line; a frame alone on its line (the usual case) found without
    // scanning it backwards.
    const at = line.startsWith(mark) && line.indexOf(mark, 1) < 0 ? 0 : line.lastIndexOf(mark);
    if (at < 0) return hooks.onLog(line);
    if (at > 0) hooks.onLog(line.slice(0, at));
    try {
      hooks.onMessage(JSON.parse(line.slice(at + mark.length)) as SandboxMessage);
    } catch {
      hooks.onLog(`dropped a malformed message from sandbox ${o.label}`);
    }
  });
  let stderrTail = "";
  const stderrDone = readLines(child.stderr, 65_536, (line) => {
    stderrTail = (stderrTail + line + "\n").slice(-4096);
    hooks.onLog(line);
  });
  child.status.then(async (status) => {
    dead = true;
    // A launcher's refusal names the path: read it whole (nothing else holds stderr then).
    if (status.code === REFUSED_EXIT) await _within(stderrDone, 2000);
    const why = await o.ended(status, stderrTail);
    ended();
    hooks.onExit(why);
  });
  return t;
}

function _within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p.then(() => {}),
    new Promise<void>((resolve) => timer = setTimeout(resolve, ms)),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Call `onLine` for each line of `stream`; a line longer than `limit` is
 * dropped with a note.
 */
export async function readLines(
  stream: ReadableStream<Uint8Array>,
  limit: number,
  onLine: (line: string) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  let buf = "";
  let skipping = false;
  // One buffer, read into again and again (a default reader allocates and
  // zeroes a fresh 64 KiB chunk per read: most of a small call's cost).
  const reader = stream.getReader({ mode: "byob" });
  let space = new Uint8Array(65_536);
  try {
    for (;;) {
      const { value, done } = await reader.read(space);
      if (done || !value) break;
      space = new Uint8Array(value.buffer);
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (skipping) skipping = false;
        else onLine(line);
      }
      if (buf.length > limit) {
        buf = "";
        skipping = true; // drop the rest of an oversized line
        onLine(`[sandbox output line over ${limit} bytes dropped]`);
      }
    }
  } catch { /* stream closed */ }
  if (buf && !skipping) onLine(buf);
}
