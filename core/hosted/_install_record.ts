/**
 * What an install of a hosted server leaves beside it (`install.json`),
 * read again and checked before every start: the package at its exact
 * version with its integrity, and for PyPI every distribution of the venv
 * and the digest of its manifest. Written by ./install.ts and
 * ./_pypi_install.ts.
 *
 * @module
 */

/** One distribution installed in a PyPI server's venv. */
export interface PypiDistribution {
  name: string;
  /** The exact version installed. */
  version: string;
  /** `sha256:<hex>` of its dist-info `RECORD` (which holds each of its files' hashes). */
  record: string;
}

/** What an install left, read again before every start. */
export interface InstallRecord {
  kind: "npm" | "pypi";
  package: string;
  version: string;
  /** npm: the package's integrity from the lock; pypi: sha256 of the dist-info RECORD. */
  integrity: string;
  /** npm: the private Deno cache; pypi: the venv. */
  dir: string;
  /** npm: the lock file. */
  lock?: string;
  /** pypi: the interpreter's base prefix (bound read-only in the namespace). */
  pythonHome?: string;
  /** pypi: SHA-256 of the named distribution's file, checked against the entry's `sha256`. */
  sha256?: string;
  /** pypi: every distribution of the venv, dependencies included. */
  distributions?: PypiDistribution[];
  /** pypi: `sha256:<hex>` of the venv's manifest (core/hosted/_venv_integrity.ts), checked at each start. */
  tree?: string;
  time: string;
}
