/**
 * Which entries of an upper layer the overlay copied up from the tree (the
 * tree had them when the sandbox first changed them), as opposed to made
 * new: a copy-up carries the overlay's `origin` xattr (`trusted.overlay.origin`,
 * or `user.overlay.origin` in a user namespace). The judge reads it for a
 * path the tree no longer holds: a file the tool changed that the user
 * removed since is a conflict (their removal stays), never brought back.
 *
 * Deno cannot read xattrs: GNU tar lists them (`-vvv --xattrs`) into
 * /dev/null, which it never fills, so no file's content is read.
 *
 * @module
 */

/**
 * The entries among `rels` (relative to `upper`) that were copied up.
 * Throws when tar cannot be run.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { copiedUp } from "./_copy_ups.ts";
 * const u = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${u}/new.txt`, "made here");
 * assert.equal((await copiedUp(u, ["new.txt"])).size, 0);
 * ```
 */
export async function copiedUp(upper: string, rels: string[]): Promise<Set<string>> {
  const found = new Set<string>();
  if (rels.length === 0) return found;
  const child = new Deno.Command("tar", {
    args: [
      "--xattrs",
      "--xattrs-include=trusted.overlay.origin",
      "--xattrs-include=user.overlay.origin",
      "--quoting-style=escape",
      "-cvvvf",
      "/dev/null",
      "-C",
      upper,
      "--no-recursion",
      "--ignore-failed-read",
      "--null",
      "-T",
      "-",
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin", LC_ALL: "C" },
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(rels.map((r) => `./${r}\0`).join("")));
  await w.close();
  const out = await child.output();
  if (!out.success && out.stdout.length === 0) {
    const why = new TextDecoder().decode(out.stderr).split("\n")[0]?.slice(0, 200);
    throw new Error(`tar could not read the layer's entries: ${why}`);
  }
  // One line per entry listed (mode, owner, size, date, time, name), then `  x: N name`
  // per xattr. (tar skips what vanished meanwhile: names are read from its lines.)
  let current: string | undefined;
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    const m = /^[-dlcbps?][-rwxsStT]{9}\S*\s+\S+\s+\S+\s+\S+\s+\S+\s+(.*)$/.exec(line);
    if (m) {
      // A link's line ends with ` -> target` (names are escaped: no bare ` -> ` inside one).
      current = _unescape(m[1].replace(/ -> .*$/, "")).replace(/^\.\//, "").replace(/\/$/, "");
    } else if (current !== undefined && /^\s+x: \d+ (trusted|user)\.overlay\.origin$/.test(line)) {
      found.add(current);
    }
  }
  return found;
}

/** Undo tar's `escape` quoting (C escapes, `\ooo` octal bytes). */
function _unescape(s: string): string {
  if (!s.includes("\\")) return s;
  const bytes: number[] = [];
  const enc = new TextEncoder();
  for (let i = 0; i < s.length; i++) {
    if (s[i] !== "\\") {
      bytes.push(...enc.encode(s[i]));
      continue;
    }
    const oct = /^[0-7]{3}/.exec(s.slice(i + 1));
    if (oct) {
      bytes.push(parseInt(oct[0], 8));
      i += 3;
      continue;
    }
    const c = s[++i];
    bytes.push(
      ({ n: 10, t: 9, r: 13, "\\": 92, a: 7, b: 8, f: 12, v: 11 } as Record<string, number>)[c] ??
        c.charCodeAt(0),
    );
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}
