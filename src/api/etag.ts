import { createHash } from 'node:crypto';
import { PreconditionFailedError } from '../desired/errors.ts';

/** Stable JSON: object keys sorted, so equal values always hash equally. */
function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/**
 * ETag of a representation: the SHA-256 of its editable fields. A hash of the content (not a
 * counter) so that resources without a generation (server config, certificates) work alike.
 */
export function computeEtag(editable: unknown): string {
  return createHash('sha256').update(stable(editable)).digest('hex');
}

/** Honour If-Match: a missing header or `*` always passes; a stale ETag → 412. */
export function checkIfMatch(ifMatch: string | undefined, current: string): void {
  if (!ifMatch) return;
  const tags = ifMatch.split(',').map((t) => t.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1'));
  if (tags.includes('*') || tags.includes(current)) return;
  throw new PreconditionFailedError('ETag does not match: the object changed since it was read');
}
