import { createHash } from 'node:crypto';
import { PreconditionFailedError, StaleWriteError, ValidationError } from '../desired/errors.ts';

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

/** Whether If-Match lets a write of the object with ETag `current` go on: a missing header or `*` always does. */
function ifMatchPasses(ifMatch: string | undefined, current: string): boolean {
  if (!ifMatch) return true;
  const tags = ifMatch.split(',').map((t) =>
    t
      .trim()
      .replace(/^W\//, '')
      .replace(/^"(.*)"$/, '$1'),
  );
  return tags.includes('*') || tags.includes(current);
}

/** Honour If-Match: a missing header or `*` always passes; a stale ETag → 412. */
export function checkIfMatch(ifMatch: string | undefined, current: string): void {
  if (!ifMatchPasses(ifMatch, current))
    throw new PreconditionFailedError('ETag does not match: the object changed since it was read');
}

/** How often a read-check-merge-write is redone when other writers keep getting there first. */
const MAX_ATTEMPTS = 100;

/**
 * If-Match and read-merge-write as one atomic step. `read` loads the current object and its ETag is
 * checked against If-Match; `write` merges, validates and writes *conditionally on the object read*
 * (its generation, or the fields the ETag is computed from, compared inside the database), throwing
 * StaleWriteError when another writer changed it in between (in a transaction: nothing of it stays).
 * Then the object is read again: with a stale If-Match that is 412, without one the merge is redone
 * on the fresh object, so a PATCH never loses another writer's fields. `guess` must come from a read of
 * the same object whose write would fail the same way (a cache of it): the write's condition is what
 * makes the step atomic, not the freshness of the first read.
 */
export async function checkedWrite<R, T>(
  ifMatch: string | undefined,
  read: () => Promise<R>,
  etagOf: (cur: R) => string,
  write: (cur: R) => Promise<T>,
  guess?: () => Promise<R | undefined>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    // The first attempt may start from `guess` (a cached read; undefined when there is none). Only a
    // success is answered on it: a stale guess costs the write its StaleWriteError, and one that fails
    // If-Match or validation is judged again on a fresh read (validation refuses before the write's
    // transaction commits).
    const guessed = attempt === 1 ? await guess?.() : undefined;
    let cur = guessed ?? (await read());
    if (guessed !== undefined && !ifMatchPasses(ifMatch, etagOf(cur))) cur = await read();
    checkIfMatch(ifMatch, etagOf(cur));
    try {
      return await write(cur);
    } catch (e) {
      if (cur === guessed && e instanceof ValidationError) continue;
      if (!(e instanceof StaleWriteError) || attempt >= MAX_ATTEMPTS) throw e;
    }
  }
}
