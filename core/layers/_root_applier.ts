/**
 * The host's side of ./tree_applier.ts: one applier process per write root
 * of this corral process, started on the first settlement that has
 * something to write there and stopped when no sandbox over that root is
 * left. It runs in a namespace of its own (core/jail/launcher.ts opens the
 * root, checks that what it opened is exactly the path, no symlink in any
 * component and nothing renamed, and bwrap binds that open folder): the
 * root is the only thing it can write. Deno opens every path by name, so a
 * folder of the root swapped for a link at the wrong moment could still
 * lead a write elsewhere; in the namespace, elsewhere is the root itself,
 * corral's layers (read-only), the runtime (read-only) or the namespace's
 * own `/tmp`: never the host's tree outside the root. A root replaced since
 * the sandbox saw it (another folder now has its name) is refused.
 *
 * The applier is not killed with corral: when corral is gone (its stdin
 * closes) it finishes the batch under way, so that no file is left half
 * applied and no private folder is left in the tree, and exits. The
 * folders each batch writes in are noted first in a journal outside the
 * tree (./_apply_journal.ts), for an applier killed itself. Requests are
 * pipelined: the host prepares the next batch while one is applied.
 *
 * @module
 */
import { dirname } from "node:path";
import {
  findBwrap,
  launcherCommand,
  NAMESPACE_HOME,
  namespaceBase,
  runtimeFiles,
  seccompArgs,
} from "../jail/mod.ts";
import { selfCommand } from "../base/mod.ts";
import { tempToken } from "../guard/mod.ts";
import { processFilter } from "../seccomp/mod.ts";
import { ApplyJournal, sweepJournals } from "./_apply_journal.ts";
import type { ApplierOp, ApplierRequest, ApplierResult } from "./_applier_protocol.ts";

/**
 * The modules the applier loads beside its entry (bound read-only in its
 * namespace under `deno run`; a compiled corral holds them).
 */
const _MODULES = [
  new URL("./_applier_fs.ts", import.meta.url).pathname,
  new URL("../guard/temp_names.ts", import.meta.url).pathname,
];
/** `sync -f` (syncfs) flushes a batch's new files before they are renamed over the old. */
const _SYNC = "/usr/bin/sync";

interface _Applier {
  child: Deno.ChildProcess;
  ino: number;
  users: number;
  writer: WritableStreamDefaultWriter<Uint8Array>;
  waiting: Map<number, (r: ApplierResult[]) => void>;
  nextId: number;
  journal: ApplyJournal;
}

const _appliers = new Map<string, Promise<_Applier>>();
const _running = new Map<string, _Applier>();
const _users = new Map<string, number>();

/**
 * One more sandbox over `root` will settle there (its layers in
 * `layers`): the first one in this process also removes what appliers of
 * gone corral processes left in trees (./_apply_journal.ts).
 */
export function useApplier(root: string, layers?: string): void {
  _users.set(root, (_users.get(root) ?? 0) + 1);
  if (layers) sweepJournals(dirname(layers));
}

/** A sandbox over `root` is gone; the last one stops the applier. */
export function leaveApplier(root: string): void {
  const n = (_users.get(root) ?? 1) - 1;
  if (n > 0) return void _users.set(root, n);
  _users.delete(root);
  const a = _appliers.get(root);
  _appliers.delete(root);
  _running.delete(root);
  // Its stdin closes: it finishes what it was asked, then exits (and its journal goes).
  void a?.then((x) => x.writer.close().catch(() => {}), () => {});
}

/**
 * Apply `ops` to `root` (whose inode was `ino` when the sandbox started);
 * `layers` is the folder holding the upper layers it copies from. With
 * `durable`, the answer comes once what was applied since the last durable
 * request is on disk. Several calls may be under way at once: the applier
 * takes them in the order they were made.
 */
export async function applyInRoot(
  root: string,
  ino: number,
  layers: string,
  ops: ApplierOp[],
  durable = false,
): Promise<ApplierResult[]> {
  if (ops.length === 0 && !durable) return [];
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
  const folders = new Set<string>();
  for (const o of ops) {
    if (o.op === "write" || o.op === "link") {
      folders.add(o.rel.slice(0, Math.max(0, o.rel.lastIndexOf("/"))));
    }
  }
  await a.journal.note(folders, a.child.pid);
  const req: ApplierRequest = durable ? { id, ops, durable } : { id, ops };
  await a.writer.write(new TextEncoder().encode(JSON.stringify(req) + "\n"));
  return await done;
}

/**
 * The applier's namespace: nothing of the host's but the runtime and the
 * applier's module (read-only; in a compiled corral the runtime is corral,
 * re-run as `__applier`), corral's layers (read-only) and the root,
 * bound from the folder the launcher opened and checked, writable. Deno's
 * cache is the namespace's own `/tmp`: the module needs no other.
 */
async function _command(root: string, layers: string, token: string): Promise<Deno.Command> {
  const bwrap = await findBwrap();
  if (!bwrap) {
    throw new Error(`cannot write ${root}: bubblewrap is needed to apply a sandbox's changes`);
  }
  const rt = await runtimeFiles();
  // `deno run tree_applier.ts`, or a compiled corral itself as `corral __applier`.
  const flags = [
    "--no-prompt",
    "--no-config",
    "--no-lock",
    "--quiet",
    "--allow-read",
    "--allow-write",
    `--allow-run=${_SYNC}`,
  ];
  const self = selfCommand("__applier", rt.exec, flags, [token]);
  // The jail's second wall too (core/seccomp/), when this process made its filter.
  const filter = await processFilter();
  const ns = [
    // Not --die-with-parent: with corral gone, it finishes its batch, then exits.
    ...namespaceBase(false).filter((a) => a !== "--die-with-parent"),
    ...(filter ? seccompArgs(filter) : []),
    ...rt.libDirs.flatMap((d) => ["--ro-bind-try", d, d]),
    ...["--ro-bind", rt.exec, rt.exec],
    ...["--ro-bind-try", _SYNC, _SYNC],
    ...["--bind-fd", root, root],
    ...["--ro-bind", layers, layers],
    ...[...self.code, ...(self.code.length ? _MODULES : [])].flatMap((f) => ["--ro-bind", f, f]),
    ...["--chdir", root],
  ];
  const [bash, ...launcher] = launcherCommand();
  return new Deno.Command(bash, {
    args: [...launcher, bwrap, ...ns, "--", ...self.command],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: {
      PATH: "/usr/bin:/bin",
      NO_COLOR: "1",
      DENO_NO_UPDATE_CHECK: "1",
      DENO_DIR: `${NAMESPACE_HOME}/deno`,
      HOME: NAMESPACE_HOME,
    },
  });
}

async function _start(root: string, layers: string): Promise<_Applier> {
  // What appliers of gone corral processes left in a tree goes first.
  sweepJournals(dirname(layers));
  const token = tempToken();
  const child = (await _command(root, layers, token)).spawn();
  const a: _Applier = {
    child,
    ino: -1,
    users: 0,
    writer: child.stdin.getWriter(),
    waiting: new Map(),
    nextId: 1,
    journal: new ApplyJournal(dirname(layers), root, token),
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
    // A clean end: every batch removed its private folders.
    if (s.code === 0) await a.journal.close();
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
