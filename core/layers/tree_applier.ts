/**
 * The process that writes settled changes into one write root of the
 * user's tree (./root_applier.ts starts it in that root, as it was opened
 * and checked). For each write it steps from the root into each folder on
 * the way and checks, after each step, where it stands (its real path, and
 * the root's inode): a name swapped for a symlink at any moment moves it
 * elsewhere, which is seen and refused before anything is written, and the
 * write itself names only the last component, in the folder it stands in.
 * Deno still opens that by its full name, so a swap between the check and
 * the open is not seen here: what bounds it is the namespace the applier
 * runs in (./root_applier.ts), where the root is the only writable folder.
 * It holds unscoped read and write there (a symlink needs them in Deno).
 *
 * Protocol: one JSON request per line on stdin
 * (`{ id, ops: [{ op, rel, from?, mode?, keep? }] }`), one JSON answer per
 * line on stdout (`{ id, results: [{ ok, error?, sig? }] }`); the first line
 * it writes is `{ ready: true, ino }`.
 *
 * @module
 */

/** One write, relative to the root. */
export interface ApplierOp {
  op: "write" | "dir" | "link" | "remove" | "prune";
  rel: string;
  /** The upper layer's file or link (absolute, in corral's layers folder). */
  from?: string;
  mode?: number;
  /** For `prune`: the names the folder keeps. */
  keep?: string[];
}

/** What one op did: the path's signature after it, or why it failed. */
export interface ApplierResult {
  ok: boolean;
  error?: string;
  sig?: { kind: string; ino: number; size: number; mtimeMs: number } | null;
}

/** The root as it was opened: its path then, and its inode. */
const _ROOT = Deno.cwd();
const _INO = Deno.statSync(".").ino;

async function _sig(name: string): Promise<ApplierResult["sig"]> {
  try {
    const st = await Deno.lstat(name);
    return {
      kind: st.isFile ? "file" : st.isDirectory ? "dir" : st.isSymlink ? "symlink" : "other",
      ino: st.ino ?? 0,
      size: st.size,
      mtimeMs: st.mtime?.getTime() ?? 0,
    };
  } catch {
    return null;
  }
}

/**
 * Stand in the folder that holds `rel`: the root, then each folder on the
 * way (made when missing), checked AFTER each step by where the process
 * stands (its real path): a name swapped for a symlink at any moment moves
 * it elsewhere, and that is seen and refused before anything is written.
 * Returns the last name of `rel`, or throws saying why not.
 */
function _standIn(rel: string, make: boolean): string {
  Deno.chdir(_ROOT);
  if (Deno.cwd() !== _ROOT || Deno.statSync(".").ino !== _INO) {
    throw new Error(`${_ROOT} is no longer the folder that was opened`);
  }
  const parts = rel.split("/");
  const name = parts.pop()!;
  let at = _ROOT;
  for (const p of parts) {
    at = at === "/" ? `/${p}` : `${at}/${p}`;
    if (make) {
      try {
        Deno.mkdirSync(p);
      } catch (err) {
        if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
      }
    }
    Deno.chdir(p);
    if (Deno.cwd() !== at) throw new Error(`${at}, a folder on its way, is now a link elsewhere`);
  }
  return name;
}

async function _remove(name: string): Promise<void> {
  try {
    await Deno.remove(name, { recursive: true });
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

async function _one(o: ApplierOp): Promise<ApplierResult> {
  if (
    !o.rel || o.rel.startsWith("/") ||
    o.rel.split("/").some((p) => p === ".." || p === "" || p === ".")
  ) {
    return { ok: false, error: `not a path inside the root: ${o.rel}` };
  }
  let name: string;
  try {
    name = _standIn(o.rel, o.op !== "remove" && o.op !== "prune");
  } catch (err) {
    // A folder on the way is missing: nothing to remove there.
    if (err instanceof Deno.errors.NotFound && (o.op === "remove" || o.op === "prune")) {
      return { ok: true, sig: null };
    }
    return { ok: false, error: (err as Error).message };
  }
  const now = await _sig(name);
  switch (o.op) {
    case "write":
      if (now && now.kind !== "file") await _remove(name);
      await Deno.copyFile(o.from!, name);
      await Deno.chmod(name, (o.mode ?? 0o644) & 0o1777);
      break;
    case "link": {
      const target = await Deno.readLink(o.from!);
      await _remove(name);
      await Deno.symlink(target, name);
      break;
    }
    case "dir":
      if (now && now.kind !== "dir") await _remove(name);
      if (!now || now.kind !== "dir") await Deno.mkdir(name);
      await Deno.chmod(name, (o.mode ?? 0o755) & 0o1777);
      break;
    case "remove":
      await _remove(name);
      break;
    case "prune": {
      if (now?.kind !== "dir") break;
      Deno.chdir(name);
      if (Deno.statSync(".").ino !== now.ino) throw new Error(`${o.rel} changed meanwhile`);
      const keep = new Set(o.keep ?? []);
      for await (const e of Deno.readDir(".")) if (!keep.has(e.name)) await _remove(e.name);
      return { ok: true, sig: await _sig(".") };
    }
  }
  return { ok: true, sig: await _sig(name) };
}

async function _main(): Promise<void> {
  const enc = new TextEncoder();
  const out = (v: unknown) => Deno.stdout.write(enc.encode(JSON.stringify(v) + "\n"));
  await out({ ready: true, ino: (await Deno.stat(".")).ino });
  const dec = new TextDecoder();
  let buf = "";
  for await (const chunk of Deno.stdin.readable) {
    buf += dec.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const req = JSON.parse(line) as { id: number; ops: ApplierOp[] };
      const results: ApplierResult[] = [];
      for (const o of req.ops) {
        try {
          results.push(await _one(o));
        } catch (err) {
          results.push({ ok: false, error: String((err as Error).message ?? err).slice(0, 300) });
        }
      }
      await out({ id: req.id, results });
    }
  }
}

/** Serve the protocol on stdin and stdout until stdin ends (a compiled corral: `corral __applier`). */
export function runTreeApplier(): Promise<void> {
  return _main();
}

if (import.meta.main) await _main();
