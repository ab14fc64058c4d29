/**
 * Where held changes live: corral's own state folder (core/config/install_dir.ts
 * `heldBases`: inside the trust base, hidden from every sandbox, never in
 * the user's tree), one folder per held set, named by its ID. A set holds,
 * per write root, the upper layer of what the call wrote (`0/u`, `1/u`, …:
 * files, folders, links, whiteouts and opaque folders as the overlay left
 * them, copied by GNU tar) and `manifest.json`: whose it is, the workspace,
 * the rules it was judged by, the view of the tree it was made on, and a
 * digest of every entry. A set is read only after every entry is checked
 * against its manifest: a set changed or broken on disk is refused whole.
 *
 * @module
 */
import { join } from "node:path";
import { z } from "zod";
import { heldBases, ownStateDir } from "../config/mod.ts";
import { isWithin } from "../base/mod.ts";

const _sig = z.object({
  kind: z.enum(["file", "dir", "symlink", "other"]),
  ino: z.number(),
  size: z.number(),
  mtimeMs: z.number(),
});

const _entry = z.object({
  rel: z.string().min(1),
  kind: z.enum(["file", "dir", "symlink", "whiteout", "other"]),
  /** `+` made, `~` changed, `-` removed, `=` a folder only on the way to one (as held). */
  change: z.enum(["+", "~", "-", "="]),
  mode: z.number().int().min(0).max(0o7777),
  size: z.number().int().min(0).optional(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/).optional(),
  target: z.string().optional(),
  opaque: z.boolean().optional(),
});

/** The schema of a held set's `manifest.json`. */
export const heldManifestSchema = z.object({
  version: z.literal(1),
  id: z.string(),
  workspace: z.string(),
  time: z.string(),
  toolset: z.string(),
  tools: z.array(z.string()),
  by: z.array(z.string()),
  identity: z.string().optional(),
  session: z.string().optional(),
  rules: z.object({
    workspace: z.string(),
    entries: z.array(z.string()),
    trust: z.array(z.object({ path: z.string(), what: z.string() })),
    pathDirs: z.array(z.string()),
    grantPaths: z.array(z.string()),
  }),
  roots: z.array(z.object({
    root: z.string(),
    ino: z.number(),
    epoch: z.number(),
    view: z.array(z.tuple([z.string(), _sig.nullable()])),
    births: z.record(z.string(), z.number()),
    entries: z.array(_entry),
    /** What the layer held that cannot be held (a name not UTF-8, a socket): refused. */
    notHeld: z.array(z.object({ path: z.string(), why: z.string() })),
  })).min(1),
});

/** A held set's manifest. */
export type HeldManifest = z.infer<typeof heldManifestSchema>;
/** One entry of a held root. */
export type HeldEntry = z.infer<typeof _entry>;

/** A held set that cannot be read: its manifest or an entry is missing, broken or changed. */
export class HeldCorrupt extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "HeldCorrupt";
  }
}

/** No held set by that ID (in any of corral's held folders). */
export class HeldNotFound extends Error {
  constructor(message: string) {
    super(message);
    this.name = "HeldNotFound";
  }
}

/** The IDs corral makes: 8 lower-case hex digits. */
export const HELD_ID = /^[0-9a-f]{8}$/;

/**
 * The held folder for sets over `roots`: the first of corral's held
 * folders that lies outside every root and holds none of them.
 */
export function heldBaseFor(roots: readonly string[]): string {
  const base = heldBases().find((b) =>
    roots.every((r) => !isWithin(b, r) && !isWithin(r, b)) && ownStateDir(b)
  );
  if (!base) {
    throw new Error(
      `no folder for held changes lies outside the write grant (${roots.join(", ")}): ` +
        `set CORRAL_HELD_DIR to a folder outside it`,
    );
  }
  return base;
}

/** A new, empty set's folder in `base`, with its ID. */
export function newHeldDir(base: string): { id: string; dir: string } {
  for (;;) {
    const id = Array.from(
      crypto.getRandomValues(new Uint8Array(4)),
      (b) => b.toString(16).padStart(2, "0"),
    ).join("");
    const dir = join(base, id);
    try {
      Deno.mkdirSync(dir, { mode: 0o700 });
      return { id, dir };
    } catch (err) {
      if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
    }
  }
}

/** Write `m` as the manifest of the set in `dir` (written beside, then renamed over). */
export async function writeManifest(dir: string, m: HeldManifest): Promise<void> {
  const tmp = join(dir, ".manifest.json.tmp");
  await Deno.writeTextFile(tmp, JSON.stringify(m), { mode: 0o600 });
  await Deno.rename(tmp, join(dir, "manifest.json"));
}

/** One held set found on disk: its folder and manifest, or why its manifest cannot be read. */
export interface HeldFound {
  id: string;
  dir: string;
  manifest?: HeldManifest;
  broken?: string;
}

/**
 * Every held set in corral's held folders (newest first); a set whose
 * manifest is missing or broken is listed with why.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { HELD_ID, listHeld } from "./held_store.ts";
 * assert.ok(listHeld().every((h) => HELD_ID.test(h.id) && (h.manifest || h.broken)));
 * ```
 */
export function listHeld(): HeldFound[] {
  const out: HeldFound[] = [];
  for (const base of heldBases()) {
    let names: string[];
    try {
      names = [...Deno.readDirSync(base)].filter((e) => e.isDirectory).map((e) => e.name);
    } catch {
      continue;
    }
    for (const id of names.filter((n) => HELD_ID.test(n))) out.push(readHeld(id, join(base, id)));
  }
  return out.sort((a, b) => (b.manifest?.time ?? "").localeCompare(a.manifest?.time ?? ""));
}

/** The set `id` in `dir`, its manifest read and validated (not its entries: {@link checkHeld}). */
export function readHeld(id: string, dir: string): HeldFound {
  let text: string;
  try {
    text = Deno.readTextFileSync(join(dir, "manifest.json"));
  } catch (err) {
    return { id, dir, broken: `its manifest cannot be read (${(err as Error).message})` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { id, dir, broken: "its manifest is not JSON" };
  }
  const parsed = heldManifestSchema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    return { id, dir, broken: `its manifest is not valid (${i.path.join(".")}: ${i.message})` };
  }
  if (parsed.data.id !== id) return { id, dir, broken: `its manifest names another ID` };
  return { id, dir, manifest: parsed.data };
}

/**
 * The held set `id` of `workspace`. Throws {@link HeldNotFound} for an
 * unknown ID or one of another workspace (saying which), and
 * {@link HeldCorrupt} for a set whose manifest cannot be read.
 */
export function findHeld(id: string, workspace: string): HeldFound & { manifest: HeldManifest } {
  if (!HELD_ID.test(id)) {
    throw new HeldNotFound(`"${id}" is not the ID of held changes (8 hex digits: corral changes)`);
  }
  const found = listHeld().find((h) => h.id === id);
  if (!found) {
    throw new HeldNotFound(
      `no held changes "${id}" (corral changes lists them; applied or dropped ones are gone)`,
    );
  }
  if (!found.manifest) {
    throw new HeldCorrupt(
      `held changes ${id} are corrupted: ${found.broken}; drop them: corral changes drop ${id}`,
    );
  }
  if (found.manifest.workspace !== workspace) {
    throw new HeldNotFound(
      `held changes ${id} belong to the workspace ${found.manifest.workspace}, not ${workspace}` +
        ` (run corral changes --workspace ${found.manifest.workspace})`,
    );
  }
  return found as HeldFound & { manifest: HeldManifest };
}

/**
 * Take the set in `dir` for one apply or drop: refused while another
 * corral process has it (a lock whose process is gone is taken over).
 * Returns the release.
 */
export function lockHeld(dir: string, id: string): () => void {
  const lock = join(dir, ".lock");
  for (let tries = 0; tries < 2; tries++) {
    try {
      Deno.writeTextFileSync(lock, String(Deno.pid), { createNew: true, mode: 0o600 });
      return () => Deno.removeSync(lock);
    } catch (err) {
      if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
      const pid = Number(Deno.readTextFileSync(lock).trim());
      if (pid > 0 && _alive(pid)) {
        throw new Error(`held changes ${id} are being applied or dropped by corral process ${pid}`);
      }
      Deno.removeSync(lock);
    }
  }
  throw new Error(`held changes ${id}: their lock cannot be taken`);
}

/** Remove a held set's folder (its whiteouts and read-only folders too). */
export async function removeHeld(dir: string): Promise<void> {
  const out = await new Deno.Command("/bin/sh", {
    args: ["-c", 'chmod -R u+rwx -- "$1" 2>/dev/null; rm -rf -- "$1"', "corral-held", dir],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin" },
  }).output();
  if (!out.success) {
    throw new Error(`cannot remove ${dir}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}

/** Whether process `pid` is alive (Deno reads `/proc` only with every permission: the shell). */
function _alive(pid: number): boolean {
  return new Deno.Command("/bin/sh", {
    args: ["-c", '[ -d "/proc/$1" ]', "corral-held", String(pid)],
    stdin: "null",
    stdout: "null",
    stderr: "null",
    clearEnv: true,
  }).outputSync().success;
}
