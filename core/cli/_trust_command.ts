/**
 * `corral trust [FILE…]`: trust the project's `corral.json` and
 * `permissions.json` as they are now (the workspace's, when no file is
 * named). corral records the SHA-256 of each in its config directory and
 * uses exactly that content from then on; a file changed since is refused
 * until it is trusted again (core/config/project_trust.ts).
 *
 * @module
 */
import { dirname, join } from "node:path";
import { PROJECT_FILES, projectFile, trustFile } from "../config/mod.ts";
import { ConfigError } from "../tool/mod.ts";
import type { CliValues } from "./_options.ts";
import { out } from "./_output.ts";
import { userCwd } from "./_user_cwd.ts";

/** Run `corral trust`; returns the exit code. */
export async function trustCommand(values: CliValues, rest: string[]): Promise<number> {
  let files = rest;
  if (files.length === 0) {
    // The workspace's own files (--workspace, else where the user stands).
    const workspace = await _dir(values.workspace ?? userCwd());
    files = [];
    for (const name of PROJECT_FILES) {
      try {
        if ((await projectFile(workspace, name)).state !== "absent") {
          files.push(join(workspace, name));
        }
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        files.push(join(workspace, name)); // changed since trusted: trusting it again is the point
      }
    }
    if (files.length === 0) {
      throw new ConfigError(
        `nothing to trust: ${workspace} has no ${PROJECT_FILES.join(" or ")}`,
      );
    }
  }
  for (const file of files) {
    const t = await trustFile(file, dirname(file));
    out(`trusted ${t.file} (sha256 ${t.sha256.slice(0, 16)}…): corral uses it as it is now`);
  }
  return 0;
}

async function _dir(path: string): Promise<string> {
  try {
    return await Deno.realPath(path);
  } catch (err) {
    throw new ConfigError(`Cannot trust the files of ${path}: ${(err as Error).message}`);
  }
}
