import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConflictError, PreconditionFailedError, StaleWriteError, ValidationError } from '../desired/errors.ts';
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
  await assert.rejects(
    checkedWrite(undefined, read, etagOf, async () => Promise.reject(new RangeError('boom'))),
    RangeError,
  );
  await assert.rejects(
    checkedWrite(undefined, read, etagOf, async () => Promise.reject(new StaleWriteError('The thing'))),
    (e: unknown) => e instanceof ConflictError && /changed concurrently/.test((e as Error).message),
  );
});

test('checkedWrite with a guess: a success on it stands; a stale one, one failing If-Match or refused by validation are judged again on a fresh read', async () => {
  const etagOf = (r: { v: number }) => computeEtag(r);
  let fresh = { v: 2 };
  const read = async () => ({ ...fresh });
  const guessOf = (v: number) => async () => ({ v });
  // Current guess: no read at all.
  let reads = 0;
  const counted = async () => (reads++, read());
  assert.equal(await checkedWrite(undefined, counted, etagOf, async (cur) => cur.v, guessOf(2)), 2);
  assert.equal(reads, 0);
  // Stale guess: its conditional write fails, the fresh row is written.
  const seen: number[] = [];
  const conditional = async (cur: { v: number }) => {
    seen.push(cur.v);
    if (cur.v !== fresh.v) throw new StaleWriteError('x');
    return cur.v;
  };
  assert.equal(await checkedWrite(undefined, read, etagOf, conditional, guessOf(1)), 2);
  assert.deepEqual(seen, [1, 2]);
  // If-Match of the fresh row against a stale guess: no 412, the fresh row is written.
  seen.length = 0;
  assert.equal(await checkedWrite(`"${etagOf(fresh)}"`, read, etagOf, conditional, guessOf(1)), 2);
  assert.deepEqual(seen, [2]);
  // If-Match of the stale row matches the stale guess: its conditional write fails, and the fresh read is 412.
  seen.length = 0;
  await assert.rejects(
    checkedWrite(`"${etagOf({ v: 1 })}"`, read, etagOf, conditional, guessOf(1)),
    PreconditionFailedError,
  );
  assert.deepEqual(seen, [1]);
  // A refusal on the guess is judged again on the fresh row; one on the fresh row is the answer.
  seen.length = 0;
  const validating = async (cur: { v: number }) => {
    seen.push(cur.v);
    if (cur.v < 2) throw new ValidationError('too old');
    return cur.v;
  };
  assert.equal(await checkedWrite(undefined, read, etagOf, validating, guessOf(1)), 2);
  assert.deepEqual(seen, [1, 2]);
  fresh = { v: 0 };
  seen.length = 0;
  await assert.rejects(checkedWrite(undefined, read, etagOf, validating, guessOf(1)), ValidationError);
  assert.deepEqual(seen, [1, 0]);
  // No guess kept: the fresh read is the only one, and its refusal the answer.
  seen.length = 0;
  await assert.rejects(
    checkedWrite(undefined, read, etagOf, validating, async () => undefined),
    ValidationError,
  );
  assert.deepEqual(seen, [0]);
  // Other errors on the guess are not retried (a host failure comes after the write committed).
  seen.length = 0;
  await assert.rejects(
    checkedWrite(
      undefined,
      read,
      etagOf,
      async (cur) => (seen.push(cur.v), Promise.reject(new RangeError('boom'))),
      guessOf(1),
    ),
    RangeError,
  );
  assert.deepEqual(seen, [1]);
});
