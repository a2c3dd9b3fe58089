import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runCommand } from '../../src/host/exec.ts';

export interface Issued {
  cert: string;
  key: string;
}

export interface TestCa {
  dir: string;
  /** PEM of the CA certificate (what goes into server.ca / client.ca). */
  cert: string;
  /** A certificate and key issued by the CA: client (clientAuth) or server (serverAuth, SAN 127.0.0.1 and localhost). */
  issue(commonName: string, kind: 'client' | 'server'): Promise<Issued>;
  /** Revoke a certificate the CA issued. */
  revoke(cert: string): Promise<void>;
  /** The CA's current CRL, PEM. */
  crl(): Promise<string>;
  cleanup(): Promise<void>;
}

const openssl = (args: string[]) => runCommand('openssl', args, { timeoutMs: 30_000 });
const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-384', '-nodes', '-sha384'];

/** A throwaway CA made with openssl in a temp dir (its `openssl ca` database tracks revocations). */
export async function makeTestCa(name = 'svcd test CA'): Promise<TestCa> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-pki-'));
  await writeFile(path.join(dir, 'index.txt'), '');
  await writeFile(path.join(dir, 'crlnumber'), '01\n');
  await writeFile(
    path.join(dir, 'ca.cnf'),
    [
      '[ca]',
      'default_ca = ca_default',
      '[ca_default]',
      `database = ${dir}/index.txt`,
      `crlnumber = ${dir}/crlnumber`,
      `certificate = ${dir}/ca.crt`,
      `private_key = ${dir}/ca.key`,
      'default_md = sha384',
      'default_crl_days = 30',
      '',
    ].join('\n'),
  );
  await openssl([
    'req',
    '-x509',
    '-new',
    ...newKey,
    '-days',
    '30',
    '-subj',
    `/O=svcd-test/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-keyout',
    path.join(dir, 'ca.key'),
    '-out',
    path.join(dir, 'ca.crt'),
  ]);
  const f = (name: string) => path.join(dir, name);
  const cert = await readFile(path.join(dir, 'ca.crt'), 'utf8');
  let serial = 0x1000;
  let n = 0;
  return {
    dir,
    cert,
    async issue(commonName, kind) {
      const base = `issued-${++n}`;
      const ext = [
        'basicConstraints = critical,CA:FALSE',
        'keyUsage = critical,digitalSignature,keyEncipherment',
        `extendedKeyUsage = ${kind === 'server' ? 'serverAuth' : 'clientAuth'}`,
        ...(kind === 'server' ? ['subjectAltName = DNS:localhost,IP:127.0.0.1,IP:::1'] : []),
        '',
      ].join('\n');
      await writeFile(path.join(dir, `${base}.ext`), ext);
      await openssl([
        'req',
        '-new',
        ...newKey,
        '-subj',
        `/O=svcd-test/CN=${commonName}`,
        '-keyout',
        f(`${base}.key`),
        '-out',
        f(`${base}.csr`),
      ]);
      await openssl([
        'x509',
        '-req',
        '-in',
        f(`${base}.csr`),
        '-CA',
        f('ca.crt'),
        '-CAkey',
        f('ca.key'),
        '-set_serial',
        String(++serial),
        '-days',
        '30',
        '-sha384',
        '-extfile',
        f(`${base}.ext`),
        '-out',
        f(`${base}.crt`),
      ]);
      const [c, k] = await Promise.all([
        readFile(path.join(dir, `${base}.crt`), 'utf8'),
        readFile(path.join(dir, `${base}.key`), 'utf8'),
      ]);
      return { cert: c, key: k };
    },
    async revoke(pem) {
      const file = `revoke-${++n}.crt`;
      await writeFile(path.join(dir, file), pem);
      await openssl(['ca', '-config', f('ca.cnf'), '-revoke', f(file)]);
    },
    async crl() {
      await openssl(['ca', '-config', f('ca.cnf'), '-gencrl', '-out', f('ca.crl')]);
      return readFile(path.join(dir, 'ca.crl'), 'utf8');
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
