/**
 * A certificate authority of one sandbox's own, for the egress proxy that
 * terminates TLS where it injects a secret (./egress_inject.ts): made when
 * the sandbox starts (ECDSA P-256, valid one day, able to sign server
 * certificates only), trusted by that sandbox alone (its trust file,
 * ./trust_store.ts), its key never leaving the host's memory. Each host the
 * sandbox reaches gets a certificate signed by it, made once. Built with
 * `@peculiar/x509` on WebCrypto.
 *
 * @module
 */
import * as x509 from "@peculiar/x509";

const _ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const _DAY = 24 * 3600 * 1000;

/** A host's certificate and key, PEM. */
export interface HostCert {
  cert: string;
  key: string;
}

/**
 * One sandbox's CA.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { X509Certificate } from "node:crypto";
 * import { SandboxCa } from "./sandbox_ca.ts";
 * const ca = await SandboxCa.create();
 * const { cert } = await ca.certFor("api.example.test");
 * const leaf = new X509Certificate(cert);
 * assert.ok(leaf.checkIssued(new X509Certificate(ca.certPem)));
 * assert.ok(leaf.checkHost("api.example.test"));
 * assert.equal(await ca.certFor("api.example.test"), await ca.certFor("api.example.test"));
 * ```
 */
export class SandboxCa {
  /** The CA's certificate (PEM): what the sandbox trusts. */
  readonly certPem: string;
  readonly #keys: CryptoKeyPair;
  readonly #subject: string;
  #hosts = new Map<string, Promise<HostCert>>();
  #serial = 1;

  private constructor(certPem: string, keys: CryptoKeyPair, subject: string) {
    this.certPem = certPem;
    this.#keys = keys;
    this.#subject = subject;
  }

  /** Make a new CA (its key is not extractable). */
  static async create(): Promise<SandboxCa> {
    const keys = await crypto.subtle.generateKey(_ALG, false, ["sign", "verify"]);
    const name = `CN=corral sandbox CA ${crypto.randomUUID().slice(0, 8)}`;
    const now = Date.now();
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: _serial(1),
      name,
      notBefore: new Date(now - 3600_000),
      notAfter: new Date(now + _DAY),
      keys,
      signingAlgorithm: _ALG,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
      ],
    });
    return new SandboxCa(cert.toString("pem"), keys, cert.subject);
  }

  /** The certificate of `host` (a name or an address), signed by this CA; made once. */
  certFor(host: string): Promise<HostCert> {
    let made = this.#hosts.get(host);
    if (!made) this.#hosts.set(host, made = this.#make(host));
    return made;
  }

  async #make(host: string): Promise<HostCert> {
    const keys = await crypto.subtle.generateKey(_ALG, true, ["sign", "verify"]);
    const ip = /^[\d.]+$|:/.test(host);
    const now = Date.now();
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: _serial(++this.#serial),
      subject: `CN=${ip ? "corral" : host}`,
      issuer: this.#subject,
      notBefore: new Date(now - 3600_000),
      notAfter: new Date(now + _DAY),
      signingKey: this.#keys.privateKey,
      publicKey: keys.publicKey,
      signingAlgorithm: _ALG,
      extensions: [
        new x509.SubjectAlternativeNameExtension([{ type: ip ? "ip" : "dns", value: host }]),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.BasicConstraintsExtension(false, undefined, true),
      ],
    });
    const key = await crypto.subtle.exportKey("pkcs8", keys.privateKey);
    return { cert: cert.toString("pem"), key: x509.PemConverter.encode(key, "PRIVATE KEY") };
  }
}

function _serial(n: number): string {
  return n.toString(16).padStart(2, "0");
}
