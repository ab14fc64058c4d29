/**
 * The integrity of a hosted PyPI server's venv: at install, every file,
 * folder and symlink of the venv (the named package, each dependency, the
 * interpreter links, `.pth` files, console scripts) is listed with the
 * SHA-256 of its content in `venv.manifest`, and the manifest's own digest
 * goes into the install record. Before every start the venv is listed
 * again; any difference (a changed, added or removed file) refuses the
 * start, naming what changed.
 *
 * The record sits next to the venv, so this catches a venv changed by
 * anything but a deliberate rewrite of both; what keeps tools from writing
 * there at all is that corral's servers folder is in the trust base
 * (read-only in every sandbox).
 *
 * @module
 */
import { dirname, join } from "node:path";
import { sha256Hex, useNativeSha256 } from "../base/mod.ts";

/** The manifest file of a venv: beside it, in its install folder. */
export function manifestFile(venv: string): string {
  return join(dirname(venv), "venv.manifest");
}

/** `sha256:<hex>` of a manifest's text. */
export function manifestDigest(text: string): string {
  return `sha256:${sha256Hex(text)}`;
}

/**
 * The manifest of the tree under `root`, one line per entry in path order:
 * `f "path" <sha256>`, `d "path"`, `l "path" "target"` (paths relative,
 * JSON-quoted; symlinks are never followed).
 */
export async function venvManifest(root: string): Promise<string> {
  const entries: Array<{ rel: string; line?: string }> = [];
  await _walk(root, "", entries);
  await useNativeSha256();
  // Hash a few files at once; the host keeps serving meanwhile.
  const files = entries.filter((e) => e.line === undefined);
  for (let i = 0; i < files.length; i += 16) {
    await Promise.all(
      files.slice(i, i + 16).map(async (e) => {
        const hex = sha256Hex(await Deno.readFile(join(root, e.rel)));
        e.line = `f ${JSON.stringify(e.rel)} ${hex}`;
      }),
    );
  }
  return entries.map((e) => e.line).join("\n") + "\n";
}

/**
 * Refuse (throw) unless the venv at `venv` is exactly what was installed:
 * its manifest's digest must equal `expected` (from the install record).
 * The Error names up to five changed paths and how to reinstall.
 */
export async function checkVenv(
  venv: string,
  expected: string | undefined,
  reinstall: string,
): Promise<void> {
  if (!expected) {
    throw new Error(
      `its venv ${venv} has no integrity record (installed by an older corral); ` +
        `refusing to start it: ${reinstall}`,
    );
  }
  let now: string;
  try {
    now = await venvManifest(venv);
  } catch (err) {
    throw new Error(`its venv ${venv} cannot be read (${(err as Error).message}): ${reinstall}`);
  }
  if (manifestDigest(now) === expected) return;
  let saved = "";
  try {
    saved = await Deno.readTextFile(manifestFile(venv));
  } catch { /* missing: said below */ }
  const changed = manifestDigest(saved) === expected
    ? _changedPaths(saved, now)
    : [`(its manifest ${manifestFile(venv)} does not match the install record either)`];
  throw new Error(
    `its venv ${venv} changed after it was installed: ${changed.slice(0, 5).join(", ")}` +
      `${changed.length > 5 ? `, and ${changed.length - 5} more` : ""}; ` +
      `refusing to start it: ${reinstall}`,
  );
}

const _QUOTED = /^\w ("(?:[^"\\]|\\.)*")/;

function _unquote(path: string): string {
  try {
    return JSON.parse(path);
  } catch {
    return path;
  }
}

function _changedPaths(before: string, after: string): string[] {
  const index = (text: string) =>
    new Map(text.split("\n").filter(Boolean).map((l) => [_QUOTED.exec(l)?.[1] ?? l, l]));
  const [b, a] = [index(before), index(after)];
  const out: string[] = [];
  for (const [path, line] of a) {
    if (!b.has(path)) out.push(`${_unquote(path)} added`);
    else if (b.get(path) !== line) out.push(`${_unquote(path)} modified`);
  }
  for (const path of b.keys()) if (!a.has(path)) out.push(`${_unquote(path)} removed`);
  return out;
}

async function _walk(
  root: string,
  rel: string,
  out: Array<{ rel: string; line?: string }>,
): Promise<void> {
  const names: string[] = [];
  for await (const e of Deno.readDir(rel ? join(root, rel) : root)) names.push(e.name);
  names.sort();
  for (const name of names) {
    const r = rel ? `${rel}/${name}` : name;
    const st = await Deno.lstat(join(root, r));
    if (st.isSymlink) {
      out.push({
        rel: r,
        line: `l ${JSON.stringify(r)} ${JSON.stringify(await Deno.readLink(join(root, r)))}`,
      });
    } else if (st.isDirectory) {
      out.push({ rel: r, line: `d ${JSON.stringify(r)}` });
      await _walk(root, r, out);
    } else if (st.isFile) {
      out.push({ rel: r });
    } else {
      out.push({ rel: r, line: `o ${JSON.stringify(r)}` });
    }
  }
}
