/**
 * What a sandbox namespace keeps read-only inside its write grant, ready to
 * bind: the protected entries (core/guard/planted_scan.ts) and the trust base
 * and secrets, each missing one held by a placeholder (core/guard/placeholders.ts)
 * so that bwrap binds a path that exists and leaves nothing behind.
 *
 * @module
 */
import { dirname, extname } from "node:path";
import { isWithin } from "./namespace.ts";
import {
  holdPlaceholders,
  placeholderCount,
  type PlaceholderSpec,
  useProtected,
} from "./placeholders.ts";
import { plantedPaths } from "./planted_scan.ts";

/** The outcome of {@link plantedMounts}. */
export interface PlantedMounts {
  /** Paths to bind read-only (the trust base given, and the protected entries). */
  protect: string[];
  /** Secrets to mask. */
  hide: string[];
  /** Give the placeholders back: call once the sandbox and all it started are gone. */
  release: () => void;
}

/**
 * Prepare the read-only paths of one sandbox: `write` its write grant,
 * `entries` the protected entries (absent: the defaults), `protect` and
 * `hide` the trust base. Throws an `Error` naming the path when a
 * placeholder cannot be made or an entry is a symbolic link.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { plantedMounts } from "./planted_mounts.ts";
 * const ws = await Deno.realPath(await Deno.makeTempDir());
 * const m = plantedMounts({ write: [ws], workspace: ws, protect: [`${ws}/a/b`], hide: [] });
 * assert.ok(m.protect.includes(`${ws}/a`) && m.protect.includes(`${ws}/.envrc`));
 * m.release();
 * assert.deepEqual([...Deno.readDirSync(ws)], []);
 * ```
 */
export function plantedMounts(o: {
  write: string[];
  workspace: string;
  protect: string[];
  hide: string[];
  entries?: readonly string[];
  home?: string;
}): PlantedMounts {
  // Another corral process may remove its placeholder between the scan and the lock: once
  // locked, everything seen is checked again, and the scan redone when something went.
  for (let attempt = 1;; attempt++) {
    const found = _attempt(o, attempt >= 3);
    if (found) return found;
  }
}

type _Options = Parameters<typeof plantedMounts>[0];

function _attempt(o: _Options, last: boolean): PlantedMounts | undefined {
  const planted = o.write.length
    ? plantedPaths(o.write, o.workspace, {
      ...(o.entries ? { entries: o.entries } : {}),
      ...(o.home ? { home: o.home } : {}),
    })
    : [];
  const specs: PlaceholderSpec[] = planted.filter((p) => !p.exists);
  const seen = planted.filter((p) => p.exists).map((p) => p.path);
  // A missing trust path inside a write grant: its first missing folder holds its place.
  const hold = (p: string) => {
    const w = o.write.find((w) => w !== p && isWithin(p, w));
    if (!w) return p;
    if (_exists(p)) {
      seen.push(p);
      return p;
    }
    let at = p;
    while (dirname(at) !== w && !_exists(dirname(at))) at = dirname(at);
    // A file's name (`permissions.json`, `audit.jsonl`) gets an empty file, anything else a folder.
    const dir = at !== p || extname(at) === "";
    if (!specs.some((s) => s.path === at)) specs.push({ path: at, dir });
    return at;
  };
  const protect = [...o.protect.map(hold), ...planted.map((p) => p.path)];
  const hide = o.hide.map(hold);
  // Locked first: from here on no other corral process removes what this sandbox binds.
  const inside = [...protect, ...hide].filter((p) => o.write.some((w) => isWithin(p, w)));
  const unuse = useProtected(inside);
  if (!last && seen.some((p) => !_there(p))) {
    unuse();
    return undefined;
  }
  let give: () => void;
  try {
    give = holdPlaceholders(specs, [...new Set([o.workspace, ...o.write])]);
  } catch (err) {
    unuse();
    throw err;
  }
  // This process's locks go first, so that the last sandbox here can remove its placeholders.
  const release = () => {
    unuse();
    give();
  };
  return { protect: [...new Set(protect)], hide: [...new Set(hide)], release };
}

function _there(p: string): boolean {
  try {
    Deno.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

function _exists(p: string): boolean {
  if (placeholderCount(p) > 0) return false; // another sandbox's placeholder: hold it too
  try {
    Deno.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}
