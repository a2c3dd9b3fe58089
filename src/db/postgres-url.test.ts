import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePostgresUrl } from './postgres-url.ts';

test('a ?host= directory becomes the host option and leaves the URL', () => {
  assert.deepEqual(parsePostgresUrl('postgres://u:p@localhost/db?host=/var/run/postgresql&application_name=x'), {
    url: 'postgres://u:p@localhost/db?application_name=x',
    host: '/var/run/postgresql',
  });
});

test('a URL without a socket directory is passed as it is', () => {
  for (const url of ['postgres://u:p@127.0.0.1:5432/db', 'postgresql://u@db.example/x?host=db2.example'])
    assert.deepEqual(parsePostgresUrl(url), { url });
});
