/**
 * `corral changes show ID`'s text: each held change as a unified diff
 * against the tree as it is now (npm `diff`), headed by its verdict, what
 * applying the set now would do with it (core/layers/held_apply.ts's dry
 * run: the settlement's own judge, conflicts and mode masks). Paths are
 * quoted when they hold anything but printable characters; file text is made
 * safe for a terminal by the caller.
 *
 * @module
 */
import { join, relative } from "node:path";
import { createTwoFilesPatch } from "diff";
import type { HeldEntry, HeldManifest, HeldSettlement } from "../layers/mod.ts";
import { isWithin } from "../base/mod.ts";

/** Files larger than this are not diffed (their size is said). */
const _MAX_DIFF_BYTES = 1024 * 1024;

/** What applying the set would do with one path. */
export interface HeldVerdict {
  verdict: "apply" | "refused" | "conflict" | "kept" | "not applied";
  why?: string;
}

/**
 * The verdict of each path of the settlement `s` (keys as the change list
 * shows paths: relative to the workspace when inside it).
 */
export function heldVerdicts(m: HeldManifest, s: HeldSettlement): Map<string, HeldVerdict> {
  const out = new Map<string, HeldVerdict>();
  const shown = (abs: string) => shownPath(abs, m.workspace);
  for (const r of s.requests) out.set(shown(join(r.root, r.op.rel)), { verdict: "apply" });
  for (const k of s.report.masked ?? []) {
    out.set(k.path, { verdict: "apply", why: `its mode is masked: ${k.why}` });
  }
  for (const c of s.report.conflicts) {
    out.set(c.path, {
      verdict: "conflict",
      why: "the tree's version changed since the sandbox's view of it, and stays",
    });
  }
  for (const r of s.report.refused) {
    const kept = /^kept when /.test(r.why);
    out.set(r.path, { verdict: kept ? "kept" : "refused", why: r.why });
  }
  return out;
}

/** A path as change lists show it: relative to the workspace when inside it. */
export function shownPath(abs: string, workspace: string): string {
  return isWithin(abs, workspace) && abs !== workspace ? relative(workspace, abs) : abs;
}

/** The held set `m` (in `dir`) as text: a header, then each change with its verdict and diff. */
export async function heldDiff(m: HeldManifest, dir: string, s: HeldSettlement): Promise<string> {
  const verdicts = heldVerdicts(m, s);
  const r = s.report;
  const lines: string[] = [
    `held changes ${m.id}: ${m.tools.join(", ")} (${m.toolset || "?"}; held by ${
      m.by.join(", ")
    }) at ${m.time}`,
    `applied now: ${r.created} created, ${r.changed} changed, ${r.removed} removed; ` +
    `${r.refused.length} refused or kept, ${r.conflicts.length} in conflict` +
    (r.refused.length >= 20 || r.conflicts.length >= 20 ? " (the first 20 named)" : ""),
    "",
  ];
  const named = new Set<string>();
  for (const [i, root] of m.roots.entries()) {
    for (const e of root.entries) {
      if (e.change === "=") continue;
      const abs = join(root.root, e.rel);
      const path = shownPath(abs, m.workspace);
      named.add(path);
      const v = verdicts.get(path) ??
        { verdict: "not applied", why: "refused or in conflict (see the counts above)" };
      lines.push(`${_quoted(path)}: ${v.verdict}${v.why ? `: ${v.why}` : ""}`);
      lines.push(...await _body(e, abs, join(dir, String(i), "u", e.rel), path), "");
    }
    for (const n of root.notHeld) {
      named.add(n.path);
      lines.push(`${_quoted(n.path)}: refused: ${n.why}`, "");
    }
  }
  // What a removal would leave, or found in conflict, below the paths above.
  for (const [path, v] of verdicts) {
    if (!named.has(path) && v.verdict !== "apply") {
      lines.push(`${_quoted(path)}: ${v.verdict}${v.why ? `: ${v.why}` : ""}`, "");
    }
  }
  return lines.join("\n");
}

/** The diff of one entry against the tree now. */
async function _body(e: HeldEntry, abs: string, held: string, path: string): Promise<string[]> {
  const now = await Deno.lstat(abs).catch(() => null);
  const mode = (n: number) => n.toString(8).padStart(4, "0");
  const was = now?.isSymlink
    ? `a link to ${await Deno.readLink(abs)}`
    : now?.isDirectory
    ? "a folder"
    : now?.isFile
    ? "a file"
    : now
    ? "something else"
    : "nothing";
  switch (e.kind) {
    case "whiteout":
      if (now?.isFile) return _patch(path, abs, undefined);
      return [`removes ${was}${now?.isDirectory ? " and everything in it" : ""}`];
    case "dir": {
      const out = [now?.isDirectory ? "folder" : `a new folder (was ${was})`];
      if (now?.isDirectory && ((now.mode ?? 0) & 0o7777) !== e.mode) {
        out.push(`mode ${mode((now.mode ?? 0) & 0o7777)} -> ${mode(e.mode)}`);
      }
      if (e.opaque) out.push("made anew: what the tree holds in it goes (unless kept)");
      return out;
    }
    case "symlink":
      return [`a link to ${e.target} (was ${was})`];
    case "file": {
      const out = now && !now.isFile ? [`a file in place of ${was}`] : [];
      if (now?.isFile && ((now.mode ?? 0) & 0o7777) !== e.mode) {
        out.push(`mode ${mode((now.mode ?? 0) & 0o7777)} -> ${mode(e.mode)}`);
      }
      return [...out, ...await _patch(path, now?.isFile ? abs : undefined, held)];
    }
    default:
      return [`not a file, folder or link (was ${was})`];
  }
}

/** A unified diff of the file `from` (absent: none) to the file `to` (absent: removed). */
async function _patch(path: string, from?: string, to?: string): Promise<string[]> {
  const read = async (f?: string) => {
    if (!f) return { text: "", size: 0, binary: false };
    const st = await Deno.stat(f);
    if (st.size > _MAX_DIFF_BYTES) return { text: "", size: st.size, binary: true };
    const bytes = await Deno.readFile(f);
    const binary = bytes.subarray(0, 8000).includes(0);
    return { text: binary ? "" : new TextDecoder().decode(bytes), size: st.size, binary };
  };
  const [a, b] = await Promise.all([read(from), read(to)]);
  if (a.binary || b.binary) {
    return [
      `binary or large: ${from ? `${a.size} bytes` : "none"} -> ${to ? `${b.size} bytes` : "none"}`,
    ];
  }
  const patch = createTwoFilesPatch(
    from ? `a/${path}` : "/dev/null",
    to ? `b/${path}` : "/dev/null",
    a.text,
    b.text,
    undefined,
    undefined,
    { context: 3 },
  );
  // Its first line is a row of "=": the verdict above says which file it is.
  return patch.split("\n").slice(1).filter((l, i, all) => l || i < all.length - 1);
}

/** A path shown plainly when it is printable, else as a JSON string. */
function _quoted(path: string): string {
  return /^[\x21-\x7e][\x20-\x7e]*$/.test(path) && !path.endsWith(" ")
    ? path
    : JSON.stringify(path);
}
