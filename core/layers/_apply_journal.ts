/**
 * Where an applier (./tree_applier.ts) may have left a private folder in
 * the user's tree: before a batch writes in a folder, the host notes that
 * folder in a journal of its own, outside the tree (`applies/` beside the
 * layers' `sandboxes/`), with the applier's token. An applier removes its
 * private folders at the end of each batch and finishes its batch when the
 * host is gone, so a journal matters only after the applier itself was
 * killed: the next corral that starts an applier (any root) removes the
 * private folders that the journals of gone corral processes name, and the
 * journals. The folder removed must be exactly the path (no symlink on the
 * way) and a folder of this user named with the journal's token.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { userId } from "../config/mod.ts";
import { TEMP_PREFIX } from "../guard/mod.ts";

/** One applier's journal. */
export class ApplyJournal {
  readonly #file: string;
  readonly #head: string;
  readonly #noted = new Set<string>();
  #open: Promise<Deno.FsFile> | undefined;

  /** A journal for the applier of `root` with `token`, in the layers' base `base`. */
  constructor(base: string, root: string, token: string) {
    this.#file = join(base, "applies", `${Deno.pid}-${token}.journal`);
    this.#head = JSON.stringify({ root, token }) + "\n";
  }

  /** Note the folders (relative to the root) a batch writes in; on disk before it resolves. */
  async note(folders: Iterable<string>, applierPid?: number): Promise<void> {
    const fresh = [...folders].filter((f) => !this.#noted.has(f));
    if (fresh.length === 0) return;
    for (const f of fresh) this.#noted.add(f);
    this.#open ??= (async () => {
      await Deno.mkdir(dirname(this.#file), { recursive: true, mode: 0o700 });
      const f = await Deno.open(this.#file, { create: true, append: true, mode: 0o600 });
      const head = this.#head.replace("}", `,"pid":${applierPid ?? 0}}`);
      await f.write(new TextEncoder().encode(head));
      return f;
    })();
    const f = await this.#open;
    await f.write(new TextEncoder().encode(fresh.map((x) => JSON.stringify(x)).join("\n") + "\n"));
    await f.syncData();
  }

  /** The applier ended cleanly: nothing of it is left in the tree. */
  async close(): Promise<void> {
    const f = await this.#open?.catch(() => undefined);
    f?.close();
    this.#open = undefined;
    await Deno.remove(this.#file).catch(() => {});
  }
}

const _swept = new Set<string>();

/**
 * Once per process and base: remove what the appliers of gone corral
 * processes left in the tree, as their journals say (at once: a few
 * folders, each holding at most one batch).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sweepJournals } from "./_apply_journal.ts";
 * const base = await Deno.makeTempDir(), root = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.mkdir(`${base}/applies`);
 * await Deno.mkdir(`${root}/d/.~corral-00ff00ff/`, { recursive: true });
 * await Deno.writeTextFile(`${root}/d/.~corral-00ff00ff/1`, "half");
 * await Deno.writeTextFile(`${base}/applies/999999999-00ff00ff.journal`,
 *   JSON.stringify({ root, token: "00ff00ff", pid: 0 }) + '\n"d"\n');
 * sweepJournals(base);
 * assert.deepEqual([...Deno.readDirSync(`${root}/d`)], []);
 * assert.deepEqual([...Deno.readDirSync(`${base}/applies`)], []);
 * ```
 */
export function sweepJournals(base: string): void {
  if (_swept.has(base)) return;
  _swept.add(base);
  const dir = join(base, "applies");
  let names: string[] = [];
  try {
    names = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.endsWith(".journal"));
  } catch {
    return; // none yet
  }
  for (const name of names) {
    const pid = Number(name.split("-")[0]);
    if (pid === Deno.pid || _alive(pid)) continue;
    try {
      _sweep(join(dir, name));
    } catch { /* a later start tries again */ }
  }
}

function _sweep(file: string): void {
  const [head, ...rest] = Deno.readTextFileSync(file).split("\n").filter(Boolean);
  const { root, token, pid } = JSON.parse(head) as { root: string; token: string; pid: number };
  // Its applier may still finish the batch it had: the next start looks again.
  if (pid > 0 && _alive(pid)) return;
  if (!/^[0-9a-f]{8,64}$/.test(token)) throw new Error(`not a token: ${token}`);
  for (const line of rest) {
    const rel = JSON.parse(line) as string;
    const folder = rel ? join(root, rel) : root;
    try {
      if (Deno.realPathSync(folder) !== folder) continue; // a link on the way: not its folder
      const priv = join(folder, `${TEMP_PREFIX}${token}`);
      const st = Deno.lstatSync(priv);
      if (!st.isDirectory || (userId() !== undefined && st.uid !== userId())) continue;
      Deno.removeSync(priv, { recursive: true });
    } catch { /* nothing left there */ }
  }
  Deno.removeSync(file);
}

function _alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}
