import { generateCertificate } from '../../src/tls/ensure-server-certificate.ts';

/** A fresh client certificate + key (PEM), as `lxc remote add` would make. */
export async function makeClientCertificate(name = 'svcd-test-client'): Promise<{ cert: string; key: string }> {
  return generateCertificate(name, { serverAuth: false });
}
