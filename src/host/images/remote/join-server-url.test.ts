import assert from 'node:assert/strict';
import { test } from 'node:test';
import { joinServerUrl } from './remote-https.ts';

test('stream paths join under the server root (a path prefix kept) and never leave its origin', () => {
  assert.equal(joinServerUrl('https://h:8443', 'streams/v1/index.json').href, 'https://h:8443/streams/v1/index.json');
  assert.equal(joinServerUrl('https://h/mirror', 'images/a/lxd.tar.xz').href, 'https://h/mirror/images/a/lxd.tar.xz');
  assert.equal(joinServerUrl('https://h/mirror/', '/images/a').href, 'https://h/mirror/images/a');
  assert.throws(() => joinServerUrl('https://h', 'https://elsewhere/x'), /points to another server/);
  assert.equal(joinServerUrl('https://h', '//elsewhere/x').href, 'https://h/elsewhere/x');
  assert.throws(() => joinServerUrl('https://h', 'http://h/x'), /points to another server/);
});
