import { webcrypto, X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as x509 from '@peculiar/x509';
import { fingerprintOfDer } from '../desired/certificates.ts';

export interface ServerCertificate {
  cert: string;
  key: string;
  fingerprint: string;
}

const ALG = { name: 'ECDSA', namedCurve: 'P-384', hash: 'SHA-384' } as const;

function toPem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n');
  return `-----BEGIN ${label}-----\n${b64.trimEnd()}\n-----END ${label}-----\n`;
}

/** A self-signed ECDSA P-384 certificate (what LXD-style clients expect), made with @peculiar/x509. */
export async function generateCertificate(commonName: string, opts: { serverAuth: boolean }): Promise<{ cert: string; key: string }> {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const now = new Date();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16))).toString('hex').replace(/^[89a-f]/, '1'),
    name: `CN=${commonName.replace(/[,=+<>#;"\\]/g, '_')}, O=svcd`,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 10 * 365 * 24 * 3600 * 1000),
    keys: keys as unknown as x509.X509CertificateCreateSelfSignedParams["keys"],
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([opts.serverAuth ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth]),
      ...(opts.serverAuth
        ? [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: commonName }, { type: 'dns', value: 'localhost' }, { type: 'ip', value: '127.0.0.1' }, { type: 'ip', value: '::1' }])]
        : []),
    ],
  });
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { cert: cert.toString('pem') + '\n', key: toPem('PRIVATE KEY', pkcs8) };
}

/** Load `<state>/server.crt` + `server.key`, generating them at first start. */
export async function ensureServerCertificate(stateDir: string): Promise<ServerCertificate> {
  const certPath = path.join(stateDir, 'server.crt');
  const keyPath = path.join(stateDir, 'server.key');
  let cert: string;
  let key: string;
  try {
    [cert, key] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    ({ cert, key } = await generateCertificate(`root@${os.hostname()}`, { serverAuth: true }));
    await writeFile(keyPath, key, { mode: 0o600 });
    await writeFile(certPath, cert, { mode: 0o644 });
  }
  return { cert, key, fingerprint: fingerprintOfDer(new X509Certificate(cert).raw) };
}
