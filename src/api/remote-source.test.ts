import assert from 'node:assert/strict';
import { test } from 'node:test';
import { byteSize, parseRemoteSource, progressText } from './remote-source.ts';

test('parseRemoteSource: defaults to svc, takes lxd as svc, checks server, protocol and alias/fingerprint', () => {
  assert.deepEqual(parseRemoteSource({ server: 'https://h:8443/', alias: 'bb' }), {
    server: 'https://h:8443',
    protocol: 'svc',
    alias: 'bb',
  });
  assert.equal(parseRemoteSource({ server: 'https://h', protocol: 'lxd', fingerprint: 'ab' }).protocol, 'svc');
  assert.deepEqual(
    parseRemoteSource({
      server: 'https://h',
      protocol: 'simplestreams',
      alias: 'd/12',
      secret: null,
      certificate: 'PEM',
    }),
    {
      server: 'https://h',
      protocol: 'simplestreams',
      alias: 'd/12',
      certificate: 'PEM',
    },
  );
  assert.throws(() => parseRemoteSource({ alias: 'bb' }), /Missing "source.server"/);
  assert.throws(() => parseRemoteSource({ server: 'not a url', alias: 'bb' }), /is not a URL/);
  assert.throws(() => parseRemoteSource({ server: 'ftp://h', alias: 'bb' }), /only https and http/);
  assert.throws(() => parseRemoteSource({ server: 'https://h', protocol: 'oci', alias: 'bb' }), /"source.protocol"/);
  assert.throws(() => parseRemoteSource({ server: 'https://h', alias: 'a', fingerprint: 'b' }), /only one of/);
  assert.throws(() => parseRemoteSource({ server: 'https://h' }), /Missing "source.alias" or "source.fingerprint"/);
});

test("progressText is LXD's download_progress: percent and rate in SI units", () => {
  assert.equal(byteSize(950), '950B');
  assert.equal(byteSize(12_300_000), '12.30MB');
  assert.equal(progressText(45, 100, 1000), '45% (45B/s)');
  assert.equal(progressText(5_000_000, 10_000_000, 2000), '50% (2.50MB/s)');
  assert.equal(progressText(2000, 0, 1000), '2.00kB (2.00kB/s)');
});
