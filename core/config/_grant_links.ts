/**
 * A grant path is never resolved through a link that a tool could have
 * made: a symlink inside the workspace at or above a policy path refuses
 * that path of the grant (./policy.ts drops it and says why), whether the
 * path existed before or not.
 *
 * @module
 */
import { isAbsolute, resolve } from "node:path";
import { expandHome } from "./env_var.ts";

/**
 * The symlink (and its target) at or above the policy path `p` inside
 * `workspace`, if any.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { linkAbove } from "./_grant_links.ts";
 * const ws = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.symlink("/tmp", `${ws}/spool`);
 * assert.match(linkAbove("spool/out", ws)!, /spool \(-> \/tmp\)/);
 * assert.equal(linkAbove("other", ws), undefined);
 * ```
 */
export function linkAbove(p: string, workspace: string): string | undefined {
  const path = expandHome(p);
  const abs = isAbsolute(path) ? resolve(path) : resolve(workspace, path);
  const ws = workspace;
  if (abs === ws || !abs.startsWith(ws.endsWith("/") ? ws : ws + "/")) return undefined;
  let at = ws;
  for (const part of abs.slice(ws.length).split("/").filter(Boolean)) {
    at = at === "/" ? `/${part}` : `${at}/${part}`;
    try {
      const st = Deno.lstatSync(at);
      if (st.isSymlink) return `${at} (-> ${_readLink(at)})`;
      if (!st.isDirectory) return undefined;
    } catch {
      return undefined; // missing from here on: nothing to follow
    }
  }
  return undefined;
}

function _readLink(p: string): string {
  try {
    return Deno.readLinkSync(p);
  } catch {
    return "?";
  }
}
