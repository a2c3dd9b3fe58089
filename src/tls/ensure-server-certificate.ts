import { X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fingerprintOfDer } from '../desired/certificates.ts';
import { runCommand } from '../host/exec.ts';

export interface ServerCertificate {
  cert: string;
  key: string;
  fingerprint: string;
}

/** What may stand in a subject or a DNS name of the config below: nothing that ends a value or a line. */
const safe = (s: string) => s.replace(/[^A-Za-z0-9._@:-]/g, '_');

/** openssl's config for one certificate: its subject and its extensions, from the caller's words only. */
export function certificateConfig(commonName: string, opts: { serverAuth: boolean }): string {
  const cn = safe(commonName);
  // A server is reached by its host name (the part after `root@`), localhost and the loopback addresses.
  const host = cn.slice(cn.lastIndexOf('@') + 1) || 'localhost';
  return [
    '[req]',
    'distinguished_name = dn',
    'x509_extensions = ext',
    'prompt = no',
    '[dn]',
    'O = svcd',
    `CN = ${cn}`,
    '[ext]',
    'basicConstraints = critical,CA:FALSE',
    'keyUsage = critical,digitalSignature,keyEncipherment',
    `extendedKeyUsage = ${opts.serverAuth ? 'serverAuth' : 'clientAuth'}`,
    ...(opts.serverAuth ? [`subjectAltName = DNS:${host},DNS:localhost,IP:127.0.0.1,IP:::1`] : []),
    '',
  ].join('\n');
}

/**
 * A self-signed ECDSA P-384 certificate valid for ten years (what LXD-style clients expect), made by
 * `openssl req` (the config on its standard input, key and certificate in PEM on its standard output).
 * A child process rather than an X.509 library in svcd: loading one cost the daemon 16 MiB of RSS that
 * it kept for its whole life, for a certificate made once.
 */
export async function generateCertificate(
  commonName: string,
  opts: { serverAuth: boolean },
): Promise<{ cert: string; key: string }> {
  const out = await runCommand(
    'openssl',
    [
      'req',
      '-x509',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-384',
      '-sha384',
      '-nodes',
      '-days',
      '3650',
      '-config',
      '/dev/stdin',
      '-keyout',
      '-',
      '-out',
      '-',
    ],
    { input: certificateConfig(commonName, opts), timeoutMs: 30_000 },
  );
  // (the output's last newline is trimmed by runCommand: each block gets its own back)
  const block = (label: string) =>
    out.match(new RegExp(`-----BEGIN ${label}-----\\n[A-Za-z0-9+/=\\n]+-----END ${label}-----`))?.[0];
  const cert = block('CERTIFICATE');
  const key = block('PRIVATE KEY');
  if (!cert || !key) throw new Error('openssl req printed no certificate and key');
  return { cert: `${cert}\n`, key: `${key}\n` };
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
