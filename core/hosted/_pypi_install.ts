/**
 * Installing a hosted PyPI server into a private venv, pinned and checked:
 *
 * 1. `python3 -m venv` in the server's install folder;
 * 2. `pip download --no-deps` of exactly `<name>==<version>`, and the
 *    SHA-256 of that one file checked by corral against the entry's
 *    `sha256` (a mismatch refuses, naming both hashes). pip's
 *    `--require-hashes` is not used: it would demand a hash for every
 *    dependency as well;
 * 3. `pip install` of that verified file, with its dependencies;
 * 4. the record: every distribution of the venv (`name`, exact `version`,
 *    SHA-256 of its `RECORD`, which lists the hash of each of its files) and
 *    the digest of the venv's manifest (core/hosted/_venv_integrity.ts),
 *    checked again before every start.
 *
 * A failed install leaves nothing behind.
 *
 * @module
 */
import { basename, join } from "node:path";
import { sha256Hex, useNativeSha256 } from "../base/mod.ts";
import type { ServerEntry } from "../config/mod.ts";
import type { InstallRecord, PypiDistribution } from "./_install_record.ts";
import { installError, installStep } from "./_install_step.ts";
import { manifestDigest, manifestFile, venvManifest } from "./_venv_integrity.ts";

const _PIP = ["--disable-pip-version-check", "--no-input", "--retries", "2", "--timeout", "20"];

// Every distribution of the venv: name, version, SHA-256 of its RECORD (run with -I: no cwd, no PYTHON* variables).
const _LIST = [
  "import hashlib, json, importlib.metadata as m",
  "def record(d):",
  "    f = [p for p in (d.files or []) if p.name == 'RECORD' and p.parent.name.endswith('.dist-info')]",
  "    return 'sha256:' + hashlib.sha256(f[0].locate().read_bytes() if f else b'').hexdigest()",
  "out = [{'name': d.metadata['Name'], 'version': d.version, 'record': record(d)} " +
  "for d in m.distributions()]",
  "print(json.dumps(sorted(out, key=lambda d: d['name'].lower())))",
].join("\n");

/** Install `entry` (kind pypi) into `dir`/venv; throws naming the server and the cause. */
export async function installPypi(entry: ServerEntry, dir: string): Promise<InstallRecord> {
  try {
    return await _install(entry, dir);
  } catch (err) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw err;
  }
}

async function _install(entry: ServerEntry, dir: string): Promise<InstallRecord> {
  const venv = join(dir, "venv");
  await installStep(entry, "python3", ["-m", "venv", venv], {});
  const pip = join(venv, "bin", "pip");
  const py = join(venv, "bin", "python3");
  const dist = join(dir, "dist");
  const spec = `${entry.package}==${entry.version}`;
  await installStep(entry, pip, ["download", ..._PIP, "--no-deps", "--dest", dist, spec], {});
  const file = await _onlyFile(entry, dist);
  await useNativeSha256();
  const sha256 = sha256Hex(await Deno.readFile(file));
  if (entry.sha256 && sha256 !== entry.sha256) {
    throw installError(
      entry,
      `the downloaded ${basename(file)} has sha256 ${sha256}, but servers.${entry.name}.sha256 ` +
        `expects ${entry.sha256}; refusing to install it`,
    );
  }
  await installStep(entry, pip, ["install", ..._PIP, file], {});
  await Deno.remove(dist, { recursive: true });
  const quiet = { PYTHONDONTWRITEBYTECODE: "1" };
  const home =
    (await installStep(entry, py, ["-I", "-c", "import sys; print(sys.base_prefix)"], quiet, dir))
      .trim();
  const distributions: PypiDistribution[] = JSON.parse(
    await installStep(entry, py, ["-I", "-c", _LIST], quiet, dir),
  );
  const own = distributions.find((d) => _name(d.name) === _name(entry.package));
  if (!own || _version(own.version) !== _version(entry.version)) {
    throw installError(
      entry,
      `after the install its venv holds ${
        own ? `${own.name} ${own.version}` : "no such distribution"
      }`,
    );
  }
  const manifest = await venvManifest(venv);
  await Deno.writeTextFile(manifestFile(venv), manifest);
  return {
    kind: "pypi",
    package: entry.package,
    version: entry.version,
    integrity: own.record.replace(/^sha256:/, "sha256-record:"),
    sha256,
    distributions,
    tree: manifestDigest(manifest),
    dir: venv,
    pythonHome: home,
    time: new Date().toISOString(),
  };
}

async function _onlyFile(entry: ServerEntry, dist: string): Promise<string> {
  const files: string[] = [];
  for await (const e of Deno.readDir(dist)) if (e.isFile) files.push(e.name);
  if (files.length !== 1) {
    throw installError(entry, `pip download left ${files.length} files instead of one: ${files}`);
  }
  return join(dist, files[0]);
}

/** PEP 503: names compare case-insensitively, runs of -_. as one -. */
function _name(n: string): string {
  return n.toLowerCase().replace(/[-_.]+/g, "-");
}

/** 2.3 and 2.3.0 are the same release. */
function _version(v: string): string {
  return v.replace(/(\.0+)+$/, "");
}
