import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NotFoundError } from '../desired/errors.ts';
import { statusFor } from './errors.ts';

test('a database that cannot be reached is a 503, whether the driver, the socket or the server says so', () => {
  const wrapped = (code: string) =>
    Object.assign(new Error('query failed'), { cause: Object.assign(new Error('x'), { code }) });
  for (const code of [
    'CONNECT_TIMEOUT',
    'CONNECTION_CLOSED',
    'ECONNREFUSED',
    '57P01',
    '08006',
    'CLUSTER_DATABASE_UNREACHABLE',
  ])
    assert.equal(statusFor(wrapped(code)).status, 503, code);
  // Other database errors keep their meaning: a unique violation is a conflict; an unknown one is internal.
  assert.equal(statusFor(wrapped('23505')).status, 409);
  assert.equal(statusFor(wrapped('42P01')).status, 500);
  assert.equal(statusFor(new NotFoundError('gone')).status, 404);
});
