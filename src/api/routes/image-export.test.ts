import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contentDisposition } from './image-export.ts';
import { cleanFilename } from '../image-commit.ts';

test('Content-Disposition: bare token, quoted when needed, RFC 5987 for non-ASCII', () => {
  assert.equal(contentDisposition('debian-12.tar.xz'), 'attachment; filename=debian-12.tar.xz');
  assert.equal(contentDisposition('my image "v2".tar'), 'attachment; filename="my image \\"v2\\".tar"');
  assert.match(
    contentDisposition('débian.tar'),
    /^attachment; filename="d_bian\.tar"; filename\*=UTF-8''d%C3%A9bian\.tar$/,
  );
  assert.equal(contentDisposition('meta-x.tar.xz', 'form-data'), 'form-data; filename=meta-x.tar.xz');
});

test('X-SVC-filename keeps a base name only', () => {
  assert.equal(cleanFilename('/tmp/../etc/image.tar.gz'), 'image.tar.gz');
  assert.equal(cleanFilename('..'), '');
  assert.equal(cleanFilename('a\u0000b\nc.tar'), 'abc.tar');
  assert.equal(cleanFilename(undefined), '');
});
