import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatSize, parseOptionalSize, parseSize } from './size.ts';

describe('parseSize', () => {
  it('reads plain bytes', () => {
    assert.equal(parseSize('1073741824'), 1073741824);
    assert.equal(parseSize('0'), 0);
    assert.equal(parseSize('512B'), 512);
  });

  it('uses powers of 1024 for *iB units', () => {
    assert.equal(parseSize('5GiB'), 5 * 2 ** 30);
    assert.equal(parseSize('300MiB'), 300 * 2 ** 20);
    assert.equal(parseSize('1KiB'), 1024);
    assert.equal(parseSize('2TiB'), 2 * 2 ** 40);
  });

  it('uses powers of 1000 for kB/MB/GB/...', () => {
    assert.equal(parseSize('500MB'), 500_000_000);
    assert.equal(parseSize('1kB'), 1000);
    assert.equal(parseSize('2GB'), 2_000_000_000);
    assert.equal(parseSize('1TB'), 1e12);
  });

  it('is case-insensitive, allows spaces and fractions (rounded down)', () => {
    assert.equal(parseSize(' 10 mib '), 10 * 2 ** 20);
    assert.equal(parseSize('1.5GiB'), 1.5 * 2 ** 30);
    assert.equal(parseSize('1.0000001KB'), 1000);
  });

  it('rejects garbage with a message naming the input', () => {
    for (const bad of ['', 'GiB', '-1', '5 GiBs', '5G', '1e9', '0x10', '5 5MB']) {
      assert.throws(
        () => parseSize(bad),
        (e: unknown) => e instanceof RangeError && e.message.includes(JSON.stringify(bad)),
        bad,
      );
    }
    assert.throws(() => parseSize('9999999EiB'), /too large/);
  });
});

describe('parseOptionalSize / formatSize', () => {
  it('treats empty, absent and zero as no limit', () => {
    assert.equal(parseOptionalSize(undefined), undefined);
    assert.equal(parseOptionalSize(''), undefined);
    assert.equal(parseOptionalSize('  '), undefined);
    assert.equal(parseOptionalSize('0'), undefined);
    assert.equal(parseOptionalSize('50MiB'), 50 * 2 ** 20);
  });

  it('formats in the largest exact binary unit', () => {
    assert.equal(formatSize(300 * 2 ** 20), '300MiB');
    assert.equal(formatSize(5 * 2 ** 30), '5GiB');
    assert.equal(formatSize(1536), '1536B');
    assert.equal(formatSize(2048), '2KiB');
    assert.equal(formatSize(0), '0B');
  });
});
