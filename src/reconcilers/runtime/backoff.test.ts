import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { computeBackoff } from './backoff.ts';

describe('computeBackoff', () => {
  const opts = { baseMs: 500, maxMs: 60_000 };

  it('doubles from the base per failure', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((n) => computeBackoff(n, opts)),
      [500, 1000, 2000, 4000, 8000],
    );
  });

  it('never exceeds the cap', () => {
    assert.equal(computeBackoff(7, opts), 32_000);
    assert.equal(computeBackoff(8, opts), 60_000);
    assert.equal(computeBackoff(9, opts), 60_000);
    assert.equal(computeBackoff(10_000, opts), 60_000);
    assert.equal(computeBackoff(3, { baseMs: 1000, maxMs: 1500 }), 1500);
  });

  it('is deterministic', () => {
    assert.equal(computeBackoff(4, opts), computeBackoff(4, opts));
  });

  it('returns 0 when there is no failure to back off from', () => {
    assert.equal(computeBackoff(0, opts), 0);
    assert.equal(computeBackoff(-3, opts), 0);
    assert.equal(computeBackoff(3, { baseMs: 0, maxMs: 100 }), 0);
  });
});
