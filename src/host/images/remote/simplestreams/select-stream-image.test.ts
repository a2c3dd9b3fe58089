import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseProducts } from './parse-products.ts';
import { H, PRODUCTS } from './sample-products.ts';
import { selectStreamImage } from './select-stream-image.ts';

const images = parseProducts(PRODUCTS, 'products.json');
const S = 'https://images.example';

test('by alias: newest serial, squashfs first, for the host architectures in order', () => {
  assert.equal(selectStreamImage(images, { alias: 'debian/12' }, ['x86_64', 'i686'], S).fingerprint, H('c'));
  assert.equal(selectStreamImage(images, { alias: 'debian/12/amd64' }, ['x86_64'], S).fingerprint, H('c'));
  assert.equal(selectStreamImage(images, { alias: 'busybox' }, ['aarch64', 'armv7l'], S).fingerprint, H('e'));
  assert.equal(selectStreamImage(images, { alias: 'busybox' }, [], S).fingerprint, H('e'), 'no architectures: any');
});

test('by fingerprint: full or a unique prefix', () => {
  assert.equal(selectStreamImage(images, { fingerprint: H('b') }, ['x86_64'], S).rootfs?.ftype, 'root.tar.xz');
  assert.equal(selectStreamImage(images, { fingerprint: 'dddd' }, ['x86_64'], S).fingerprint, H('d'));
  assert.equal(selectStreamImage(images, { fingerprint: 'DDDD' }, ['x86_64'], S).fingerprint, H('d'));
});

test('errors name the server and what is missing', () => {
  assert.throws(
    () => selectStreamImage(images, { alias: 'nope' }, ['x86_64'], S),
    /Alias "nope" not found on https:\/\/images\.example/,
  );
  assert.throws(
    () => selectStreamImage(images, { alias: 'busybox' }, ['x86_64', 'i686'], S),
    /no image for this host's architectures \(x86_64, i686\); it has: aarch64/,
  );
  assert.throws(
    () => selectStreamImage(images, { fingerprint: '9999' }, ['x86_64'], S),
    /Image "9999" not found on https:\/\/images\.example/,
  );
  assert.throws(
    () =>
      selectStreamImage(
        [...images, { ...images[0]!, fingerprint: `${H('a').slice(0, 60)}0000` }],
        { fingerprint: 'aaaa' },
        [],
        S,
      ),
    /More than one image/,
  );
  assert.throws(() => selectStreamImage(images, { fingerprint: H('e') }, ['x86_64'], S), /is for architecture aarch64/);
});
