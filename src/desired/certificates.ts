import { X509Certificate, createHash } from 'node:crypto';
import { and, asc, eq, like } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';
import { ConflictError, NotFoundError, StaleWriteError, ValidationError, isUniqueViolation } from './errors.ts';
import { certificates, type CertificateRow } from './schema/index.ts';

/** SHA-256 of the DER certificate, lower-case hex (spec: Certificate fingerprint). */
export function fingerprintOfDer(der: Buffer): string {
  return createHash('sha256').update(der).digest('hex');
}

/** Parse a PEM (or bare base64 DER, as some clients send) into a normalized PEM + fingerprint. */
export function parseCertificate(input: string): { pem: string; fingerprint: string } {
  const text = input.trim();
  // Bare base64 is decoded to DER here, not wrapped into a PEM: a body whose length was a multiple of 64
  // left an empty line before the END line, which OpenSSL refuses ("wrong tag").
  const base64 = text.replace(/\s+/g, '');
  const source = text.includes('-----BEGIN')
    ? text
    : /^[A-Za-z0-9+/]+={0,2}$/.test(base64)
      ? Buffer.from(base64, 'base64')
      : undefined;
  let cert: X509Certificate;
  try {
    if (!source) throw new Error('not base64');
    cert = new X509Certificate(source);
  } catch {
    throw new ValidationError('Invalid certificate: not a PEM-encoded X.509 certificate');
  }
  return { pem: cert.toString(), fingerprint: fingerprintOfDer(cert.raw) };
}

export async function listCertificates(db: DbOrTx): Promise<CertificateRow[]> {
  return db.select().from(certificates).orderBy(asc(certificates.fingerprint));
}

/** Find by full fingerprint or a unique prefix of it. */
export async function readCertificate(db: DbOrTx, fp: string): Promise<CertificateRow> {
  if (!/^[0-9a-fA-F]{1,64}$/.test(fp)) throw new NotFoundError('Certificate not found');
  const rows = await db
    .select()
    .from(certificates)
    .where(like(certificates.fingerprint, `${fp.toLowerCase()}%`))
    .limit(2);
  if (rows.length === 0) throw new NotFoundError('Certificate not found');
  if (rows.length > 1) throw new ValidationError(`Certificate fingerprint prefix "${fp}" is ambiguous`);
  return rows[0]!;
}

export async function addCertificate(
  db: DbOrTx,
  input: { pem: string; name: string; type: string },
): Promise<CertificateRow> {
  const { pem, fingerprint } = parseCertificate(input.pem);
  if (input.type !== 'client')
    throw new ValidationError(`Unsupported certificate type "${input.type}" (only "client")`);
  try {
    const [row] = await db
      .insert(certificates)
      .values({ fingerprint, certificate: pem, name: input.name, type: input.type })
      .returning();
    return row!;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ConflictError('Certificate already in trust store');
    throw e;
  }
}

/**
 * Set name and type. With `expected` (name and type as the caller read them, what the ETag is
 * computed from) only if they are still so, compared in the update itself, else StaleWriteError.
 */
export async function updateCertificate(
  db: DbOrTx,
  fingerprint: string,
  input: { name: string; type: string },
  expected?: { name: string; type: string },
): Promise<CertificateRow> {
  if (input.type !== 'client')
    throw new ValidationError(`Unsupported certificate type "${input.type}" (only "client")`);
  const [row] = await db
    .update(certificates)
    .set(input)
    .where(
      and(
        eq(certificates.fingerprint, fingerprint),
        expected && and(eq(certificates.name, expected.name), eq(certificates.type, expected.type)),
      ),
    )
    .returning();
  if (!row) throw expected ? new StaleWriteError('The certificate') : new NotFoundError('Certificate not found');
  return row;
}

export async function deleteCertificate(db: DbOrTx, fingerprint: string): Promise<void> {
  const rows = await db.delete(certificates).where(eq(certificates.fingerprint, fingerprint)).returning();
  if (rows.length === 0) throw new NotFoundError('Certificate not found');
}
