import assert from 'node:assert/strict';
import { test } from 'node:test';
import { detectCompression, extensionOf } from './detect-compression.ts';
import { InvalidImageError } from './errors.ts';
import { parseImageMetadata } from './parse-image-metadata.ts';

test('metadata.yaml: architecture, creation_date, expiry_date and properties (scalars as strings)', () => {
  const m = parseImageMetadata(
    'architecture: x86_64\ncreation_date: 1700000000\nexpiry_date: 1800000000\nproperties:\n  os: Debian\n  release: 12\n  dev: true\n  gone: null\ntemplates:\n  /etc/hostname:\n    when: [start]\n    template: hostname.tpl\n',
  );
  assert.equal(m.architecture, 'x86_64');
  assert.equal(m.creationDate, 1700000000);
  assert.equal(m.expiryDate, 1800000000);
  assert.deepEqual(m.properties, { os: 'Debian', release: '12', dev: 'true' });
  assert.deepEqual(Object.keys(m.templates), ['/etc/hostname']);
  assert.equal(parseImageMetadata('architecture: amd64\ncreation_date: 1\n').expiryDate, undefined);
});

test('metadata.yaml without architecture or creation_date, or not YAML, is an InvalidImageError', () => {
  for (const bad of [
    'creation_date: 1\n',
    'architecture: x86_64\n',
    'architecture: pdp11\ncreation_date: 1\n',
    '[1, 2]',
    'a: [',
    'architecture: x86_64\ncreation_date: 1\nproperties: [1]\n',
    'architecture: x86_64\ncreation_date: 1\nproperties:\n  a: {b: c}\n',
  ])
    assert.throws(() => parseImageMetadata(bad), InvalidImageError, bad);
});

test('compression is detected from magic bytes; a plain tar from its ustar header', () => {
  const tar = Buffer.alloc(512);
  tar.write('ustar', 257, 'latin1');
  assert.equal(detectCompression(Buffer.from([0x1f, 0x8b, 8, 0])), 'gzip');
  assert.equal(detectCompression(Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])), 'xz');
  assert.equal(detectCompression(Buffer.from('BZh91AY')), 'bzip2');
  assert.equal(detectCompression(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0])), 'zstd');
  assert.equal(detectCompression(Buffer.from('hsqs....')), 'squashfs');
  assert.equal(detectCompression(tar), 'none');
  assert.equal(detectCompression(Buffer.from('garbage')), undefined);
  assert.equal(extensionOf('xz'), '.tar.xz');
  assert.equal(extensionOf('squashfs'), '.squashfs');
  assert.equal(extensionOf(undefined), '');
});
