/**
 * The operator's trust store, for every sandbox: the certificate
 * authorities the host trusts beyond a runtime's own (a corporate proxy
 * that intercepts TLS, an internal CA). They come from `SSL_CERT_FILE`,
 * `SSL_CERT_DIR`, `NODE_EXTRA_CA_CERTS` and `DENO_CERT` of corral's
 * environment and from `--ca-file` ({@link useCaFiles}); where only extras
 * are named, the system's own bundle comes first so that the result is a
 * whole trust store. A sandbox that holds `n` gets them as one file, bound
 * read-only, named by the variables each runtime reads
 * ({@link trustVars}): Deno, node, Python (ssl, requests, httpx), curl, git
 * and pip. The egress proxy checks a real server's certificate against
 * them too, where it terminates TLS (./egress_inject.ts).
 *
 * @module
 */
import { join } from "node:path";
import { sha256Hex } from "../base/mod.ts";

/** Where the trust file is inside a namespace (the egress proxy's bound folder). */
export const TRUST_IN_NAMESPACE = "/tmp/.corral-egress/ca.pem";

/** The system's own bundles, the first that exists comes first where only extras are named. */
const _SYSTEM_BUNDLES = [
  "/etc/ssl/certs/ca-certificates.crt",
  "/etc/pki/tls/certs/ca-bundle.crt",
  "/etc/ssl/cert.pem",
];

let _files: string[] = [];
let _certs: string[] | undefined;

/**
 * Trust `paths` too (`--ca-file`), each a PEM file; throws a TypeError
 * naming one that cannot be read or holds no certificate.
 */
export function useCaFiles(paths: readonly string[]): void {
  for (const p of paths) {
    let text: string;
    try {
      text = Deno.readTextFileSync(p);
    } catch (err) {
      throw new TypeError(`--ca-file ${p}: cannot be read (${(err as Error).message})`);
    }
    if (!_pem(text).length) throw new TypeError(`--ca-file ${p}: holds no PEM certificate`);
  }
  _files = [..._files, ...paths];
  _certs = undefined;
}

/**
 * The operator's certificates (PEM blocks, each once), or none when the
 * operator named no trust store (then every runtime keeps its own).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { operatorCerts } from "./trust_store.ts";
 * assert.ok(operatorCerts().every((c) => c.startsWith("-----BEGIN CERTIFICATE-----")));
 * ```
 */
export function operatorCerts(): string[] {
  if (_certs) return _certs;
  const file = _env("SSL_CERT_FILE");
  const extras = [_env("NODE_EXTRA_CA_CERTS"), _env("DENO_CERT"), ..._files].filter((x) =>
    x !== undefined
  ) as string[];
  const dir = _env("SSL_CERT_DIR");
  if (!file && !dir && !extras.length) return _certs = [];
  const files: string[] = [];
  // A whole store: the named file, else the system's own, then the extras.
  const base = file ?? _SYSTEM_BUNDLES.find((b) => _read(b) !== undefined);
  if (base) files.push(base);
  if (dir) files.push(..._dirFiles(dir));
  files.push(...extras);
  const seen = new Set<string>();
  for (const f of files) for (const c of _pem(_read(f) ?? "")) seen.add(c);
  return _certs = [...seen];
}

/**
 * The variables that point every runtime at the trust file `path`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { trustVars } from "./trust_store.ts";
 * const v = trustVars("/t/ca.pem");
 * assert.equal(v.DENO_CERT, "/t/ca.pem");
 * assert.equal(v.NODE_EXTRA_CA_CERTS, "/t/ca.pem");
 * assert.equal(v.SSL_CERT_FILE, "/t/ca.pem");
 * ```
 */
export function trustVars(path: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (
    const name of [
      "SSL_CERT_FILE",
      "NODE_EXTRA_CA_CERTS",
      "DENO_CERT",
      "REQUESTS_CA_BUNDLE",
      "CURL_CA_BUNDLE",
      "GIT_SSL_CAINFO",
      "PIP_CERT",
    ]
  ) vars[name] = path;
  return vars;
}

/**
 * Write the trust file of one sandbox, `dir/ca.pem`: the operator's
 * certificates and `extra` (its own CA, for injected secrets). Returns
 * whether there was anything to trust (no file is written otherwise).
 */
export function writeTrust(dir: string, extra: readonly string[] = []): boolean {
  const certs = [...operatorCerts(), ...extra];
  if (!certs.length) return false;
  // Where only the sandbox's own CA is added, the system's store stays whole beside it.
  const base = operatorCerts().length ? [] : _systemCerts();
  Deno.writeTextFileSync(join(dir, "ca.pem"), [...base, ...certs].join("\n") + "\n", {
    mode: 0o644,
  });
  return true;
}

/**
 * A trust file for a sandbox outside the namespace (`"jail": "off"`): the
 * operator's certificates in one file under `base`, named by its content;
 * undefined when the operator named none.
 */
export function hostTrustFile(base: string): string | undefined {
  const certs = operatorCerts();
  if (!certs.length) return undefined;
  const text = certs.join("\n") + "\n";
  const file = join(base, `ca-${sha256Hex(text).slice(0, 16)}.pem`);
  if (_read(file) !== text) {
    Deno.mkdirSync(base, { recursive: true, mode: 0o700 });
    const tmp = `${file}.${crypto.randomUUID()}`;
    Deno.writeTextFileSync(tmp, text, { mode: 0o644 });
    Deno.renameSync(tmp, file);
  }
  return file;
}

function _systemCerts(): string[] {
  const b = _SYSTEM_BUNDLES.find((f) => _read(f) !== undefined);
  return b ? _pem(_read(b)!) : [];
}

function _pem(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----/g)
    ?.map((c) => c.replace(/\r/g, "").trim()) ?? [];
}

function _dirFiles(dir: string): string[] {
  const out: string[] = [];
  try {
    for (const e of Deno.readDirSync(dir)) {
      if (/\.(pem|crt)$|^[0-9a-f]{8}\.\d+$/.test(e.name)) out.push(join(dir, e.name));
    }
  } catch { /* not there */ }
  return out.sort();
}

function _read(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

function _env(name: string): string | undefined {
  try {
    return Deno.env.get(name) || undefined;
  } catch {
    return undefined;
  }
}
