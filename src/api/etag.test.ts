import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PreconditionFailedError } from '../desired/errors.ts';
import { checkIfMatch, computeEtag } from './etag.ts';

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
