import { X509Certificate } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fingerprintOfDer } from '../desired/certificates.ts';

export interface ClusterCertificate {
  cert: string;
  key: string;
  fingerprint: string;
}

const certPath = (stateDir: string) => path.join(stateDir, 'cluster.crt');
const keyPath = (stateDir: string) => path.join(stateDir, 'cluster.key');

export const fingerprintOfPem = (pem: string) => fingerprintOfDer(new X509Certificate(pem).raw);

/** The cluster certificate and key this member presents (written at bootstrap or join), or undefined. */
export async function readClusterCertificate(stateDir: string): Promise<ClusterCertificate | undefined> {
  const [cert, key] = await Promise.all([
    readFile(certPath(stateDir), 'utf8').catch(() => undefined),
    readFile(keyPath(stateDir), 'utf8').catch(() => undefined),
  ]);
  if (!cert || !key) return undefined;
  return { cert, key, fingerprint: fingerprintOfPem(cert) };
}

/** Written whole or not at all (a temporary file renamed over), the key readable by root only. */
export async function writeClusterCertificate(stateDir: string, c: { cert: string; key: string }): Promise<void> {
  for (const [p, body, mode] of [
    [keyPath(stateDir), c.key, 0o600],
    [certPath(stateDir), c.cert, 0o644],
  ] as const) {
    await writeFile(`${p}.tmp`, body, { mode });
    await rename(`${p}.tmp`, p);
  }
}

/** The member left the cluster: it presents its own certificate again. */
export async function removeClusterCertificate(stateDir: string): Promise<void> {
  await Promise.all([certPath(stateDir), keyPath(stateDir)].map((p) => rm(p, { force: true })));
}
