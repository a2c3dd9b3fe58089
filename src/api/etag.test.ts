import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConflictError, PreconditionFailedError, StaleWriteError } from '../desired/errors.ts';
import { checkedWrite, checkIfMatch, computeEtag } from './etag.ts';

test('the ETag is stable across key order and changes with content', () => {
  assert.equal(computeEtag({ a: 1, b: { c: 2, d: 3 } }), computeEtag({ b: { d: 3, c: 2 }, a: 1 }));
  assert.notEqual(computeEtag({ a: 1 }), computeEtag({ a: 2 }));
  assert.notEqual(computeEtag({ a: [1, 2] }), computeEtag({ a: [2, 1] }));
});

test('If-Match: absent, *, matching (quoted or weak) pass; stale → PreconditionFailedError', () => {
  const tag = computeEtag({ x: 1 });
  checkIfMatch(undefined, tag);
  checkIfMatch('*', tag);
  checkIfMatch(`"${tag}"`, tag);
  checkIfMatch(`W/"${tag}"`, tag);
  checkIfMatch(`"other", "${tag}"`, tag);
  assert.throws(() => checkIfMatch('"stale"', tag), PreconditionFailedError);
});

test('checkedWrite: a stale write is redone on a fresh read; If-Match that no longer matches → 412; endless conflicts → 409', async () => {
  let version = 1;
  const read = async () => ({ v: version });
  const etagOf = (r: { v: number }) => computeEtag(r);
  // Another writer gets in once: the write is redone on the row read again (no If-Match).
  let calls = 0;
  const out = await checkedWrite(undefined, read, etagOf, async (cur) => {
    calls++;
    if (calls === 1) {
      version = 2;
      throw new StaleWriteError('x');
    }
    return cur.v;
  });
  assert.equal(out, 2);
  assert.equal(calls, 2);
  // With If-Match of the first read, the fresh read no longer matches: 412, no second write.
  const tag = etagOf({ v: version });
  calls = 0;
  await assert.rejects(
    checkedWrite(`"${tag}"`, read, etagOf, async () => {
      calls++;
      version++;
      throw new StaleWriteError('x');
    }),
    PreconditionFailedError,
  );
  assert.equal(calls, 1);
  // Other errors pass through untouched; a write that is always stale ends as a conflict (409), not a loop.
  await assert.rejects(checkedWrite(undefined, read, etagOf, async () => Promise.reject(new RangeError('boom'))), RangeError);
  await assert.rejects(checkedWrite(undefined, read, etagOf, async () => Promise.reject(new StaleWriteError('The thing'))), (e: unknown) => e instanceof ConflictError && /changed concurrently/.test((e as Error).message));
});
