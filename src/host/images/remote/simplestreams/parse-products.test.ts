import assert from 'node:assert/strict';
import { test } from 'node:test';
import { architectureName } from './architecture-name.ts';
import { parseProducts, serialDate } from './parse-products.ts';
import { parseStreamIndex } from './parse-stream-index.ts';
import { H, PRODUCTS } from './sample-products.ts';

test('products: split (squashfs and root.tar.xz) and unified images, LXD fingerprints, properties and aliases', () => {
  const images = parseProducts(PRODUCTS, 'products.json');
  const byFp = new Map(images.map((i) => [i.fingerprint, i]));
  assert.deepEqual([...byFp.keys()].sort(), [H('a'), H('b'), H('c'), H('d'), H('e')]);
  const sq = byFp.get(H('c'))!;
  assert.equal(sq.architecture, 'x86_64');
  assert.equal(sq.rootfs?.ftype, 'squashfs');
  assert.deepEqual(sq.meta, { path: 'images/debian/new/lxd.tar.xz', ftype: 'lxd.tar.xz', sha256: H('5'), size: 100 });
  assert.equal(sq.rootfs?.sha256, H('7'));
  assert.equal(sq.size, 3100);
  assert.equal(sq.filename, 'lxd.tar.xz');
  assert.deepEqual(sq.createdAt, new Date('2024-02-02T00:00:00Z'));
  assert.deepEqual(sq.properties, {
    os: 'Debian',
    release: 'bookworm',
    architecture: 'amd64',
    label: 'daily',
    serial: '20240202_05:24',
    description: 'Debian bookworm amd64 (daily) (20240202_05:24)',
    variant: 'default',
    type: 'squashfs',
  });
  assert.deepEqual(sq.aliases, [
    'debian/bookworm/default',
    'debian/bookworm',
    'debian/12',
    'debian/bookworm/default/amd64',
    'debian/bookworm/amd64',
    'debian/12/amd64',
  ]);
  assert.equal(
    byFp.get(H('d'))!.rootfs?.path,
    'images/debian/new/rootfs.tar.xz',
    'combined_sha256 when combined_rootxz_sha256 is absent',
  );
  assert.equal(byFp.get(H('b'))!.properties.type, 'root.tar.xz');
  const uni = byFp.get(H('e'))!;
  assert.equal(uni.rootfs, undefined);
  assert.equal(uni.architecture, 'aarch64');
  assert.equal(uni.properties.type, 'tar.gz');
  assert.deepEqual(uni.expiresAt, new Date('2030-01-31T00:00:00Z'));
  assert.deepEqual(uni.aliases, ['busybox', 'busybox/arm64']);
});

test('products: a bad fingerprint, a bad hash or a missing path drops the item; not a products file throws', () => {
  const one = (item: Record<string, unknown>) =>
    parseProducts(
      {
        products: {
          p: {
            arch: 'amd64',
            aliases: 'x',
            versions: { '20240101': { items: { u: { ftype: 'lxd_combined.tar.gz', size: 1, ...item } } } },
          },
        },
      },
      'p.json',
    );
  assert.equal(one({ path: 'a', sha256: H('a') }).length, 1);
  assert.equal(one({ path: 'a', sha256: 'abc' }).length, 0);
  assert.equal(one({ path: 'a', sha256: H('A') }).length, 0, 'uppercase fingerprints are not LXD fingerprints');
  assert.equal(one({ sha256: H('a') }).length, 0);
  assert.throws(() => parseProducts({ index: {} }, 'p.json'), /p\.json is not a simplestreams products file/);
  assert.throws(() => parseProducts([], 'p.json'), /not a simplestreams products file/);
});

test('serial dates: YYYYMMDD prefix, real dates only', () => {
  assert.deepEqual(serialDate('20240229_12:00'), new Date('2024-02-29T00:00:00Z'));
  assert.equal(serialDate('20230229'), undefined);
  assert.equal(serialDate('2024010'), undefined);
  assert.equal(serialDate('latest'), undefined);
});

test('stream index: the paths of non-empty image-downloads entries', () => {
  const index = {
    format: 'index:1.0',
    index: {
      images: { datatype: 'image-downloads', path: 'streams/v1/images.json', format: 'products:1.0', products: ['a'] },
      empty: { datatype: 'image-downloads', path: 'streams/v1/empty.json', products: [] },
      ids: { datatype: 'image-ids', path: 'streams/v1/ids.json', products: ['a'] },
    },
  };
  assert.deepEqual(parseStreamIndex(index, 'index.json'), ['streams/v1/images.json']);
  assert.throws(
    () => parseStreamIndex({ products: {} }, 'https://x/streams/v1/index.json'),
    /https:\/\/x\/streams\/v1\/index\.json is not a simplestreams index/,
  );
  assert.throws(
    () => parseStreamIndex({ index: { a: { datatype: 'image-downloads', products: ['a'] } } }, 'i'),
    /has no path/,
  );
});

test('architecture names as LXD spells them', () => {
  assert.equal(architectureName('amd64'), 'x86_64');
  assert.equal(architectureName('x86_64'), 'x86_64');
  assert.equal(architectureName('arm64'), 'aarch64');
  assert.equal(architectureName('armhf'), 'armv7l');
  assert.equal(architectureName('ppc64el'), 'ppc64le');
  assert.equal(architectureName('i386'), 'i686');
  assert.equal(architectureName('pdp11'), undefined);
});
