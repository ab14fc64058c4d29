/**
 * The host's side of ./tree_applier.ts: one applier process per write root
 * of this corral process, started on the first settlement that has
 * something to write there and stopped when no sandbox over that root is
 * left. Its launcher (`/bin/bash`) opens the root, checks that what it
 * opened is exactly the path (no symlink in any component, nothing renamed,
 * as core/guard/launcher.ts does for a sandbox), and makes it the
 * applier's current folder: every write lands in that folder, however its
 * name is swapped later. A root replaced since the sandbox saw it (another
 * folder now has its name) is refused.
 *
 * @module
 */
import type { ApplierOp, ApplierResult } from "./tree_applier.ts";

const _ENTRY = new URL("./tree_applier.ts", import.meta.url).pathname;

// Open, check, enter; then the applier, whose `.` is the folder that was opened.
const _LAUNCH = `exec 3<"$1" || exit 96
[ "$(PATH=/usr/bin:/bin readlink /proc/self/fd/3)" = "$1" ] || { echo "corral-refused $1" >&2; exit 96; }
cd /proc/self/fd/3 || exit 96
exec 3<&-
exec "$2" run --no-prompt --no-config --no-lock --quiet --allow-read=.,"$3" --allow-write=. --allow-run="$4" "$5" "$4"`;

interface _Applier {
  child: Deno.ChildProcess;
  ino: number;
  users: number;
  writer: WritableStreamDefaultWriter<Uint8Array>;
  waiting: Map<number, (r: ApplierResult[]) => void>;
  nextId: number;
}

const _appliers = new Map<string, Promise<_Applier>>();
const _running = new Map<string, _Applier>();
const _users = new Map<string, number>();

/** One more sandbox over `root` will settle there. */
export function useApplier(root: string): void {
  _users.set(root, (_users.get(root) ?? 0) + 1);
}

/** A sandbox over `root` is gone; the last one stops the applier. */
export function leaveApplier(root: string): void {
  const n = (_users.get(root) ?? 1) - 1;
  if (n > 0) return void _users.set(root, n);
  _users.delete(root);
  const a = _appliers.get(root);
  _appliers.delete(root);
  _running.delete(root);
  void a?.then((x) => {
    x.writer.close().catch(() => {});
    try {
      x.child.kill("SIGKILL");
    } catch { /* gone */ }
  }, () => {});
}

/**
 * Apply `ops` to `root` (whose inode was `ino` when the sandbox started);
 * `layers` is the folder holding the upper layers it copies from.
 */
export async function applyInRoot(
  root: string,
  ino: number,
  layers: string,
  ops: ApplierOp[],
): Promise<ApplierResult[]> {
  if (ops.length === 0) return [];
  let p = _appliers.get(root);
  if (!p) _appliers.set(root, p = _start(root, layers));
  let a: _Applier;
  try {
    a = await p;
  } catch (err) {
    _appliers.delete(root);
    throw err;
  }
  if (a.ino !== ino) {
    throw new Error(`${root} is not the folder the sandbox started with (it was replaced)`);
  }
  const id = a.nextId++;
  const done = new Promise<ApplierResult[]>((resolve) => a.waiting.set(id, resolve));
  await a.writer.write(new TextEncoder().encode(JSON.stringify({ id, ops }) + "\n"));
  return await done;
}

async function _start(root: string, layers: string): Promise<_Applier> {
  const child = new Deno.Command("/bin/bash", {
    args: ["-c", _LAUNCH, "corral-applier", root, Deno.execPath(), layers, _ln(), _ENTRY],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin", NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1", ..._denoDir() },
  }).spawn();
  const a: _Applier = {
    child,
    ino: -1,
    users: 0,
    writer: child.stdin.getWriter(),
    waiting: new Map(),
    nextId: 1,
  };
  let ready: (ino: number) => void = () => {};
  const started = new Promise<number>((r) => ready = r);
  const failed = _stderr(child.stderr);
  void (async () => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of child.stdout) {
      buf += dec.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const msg = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (msg.ready) {
          ready(msg.ino);
          continue;
        }
        a.waiting.get(msg.id)?.(msg.results);
        a.waiting.delete(msg.id);
      }
    }
  })().catch(() => {});
  child.status.then(async (s) => {
    // A later one may have its place already: only this one's entry goes.
    if (_running.get(root) === a) {
      _running.delete(root);
      _appliers.delete(root);
    }
    ready(-1);
    const why = `the applier of ${root} stopped (code ${s.code}): ${await failed}`;
    for (const w of a.waiting.values()) w([{ ok: false, error: why }]);
    a.waiting.clear();
  });
  _running.set(root, a);
  a.ino = await started;
  if (a.ino < 0) throw new Error(`cannot write ${root}: ${await failed || "it changed"}`);
  return a;
}

async function _stderr(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    text = (text + chunk).slice(-2000);
  }
  return text.trim().split("\n").at(-1) ?? "";
}

function _ln(): string {
  for (const p of ["/usr/bin/ln", "/bin/ln"]) {
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch { /* not there */ }
  }
  return "/usr/bin/ln";
}

function _denoDir(): Record<string, string> {
  try {
    const d = Deno.env.get("DENO_DIR");
    const home = Deno.env.get("HOME");
    return { ...(d ? { DENO_DIR: d } : {}), ...(home ? { HOME: home } : {}) };
  } catch {
    return {};
  }
}
