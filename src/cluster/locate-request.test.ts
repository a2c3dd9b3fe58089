import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRequestSubject } from './locate-request.ts';

const q = (s = '') => new URLSearchParams(s);

test('containers and instances: a create is placed, every other request goes where the container is', () => {
  for (const c of ['containers', 'instances']) {
    assert.deepEqual(parseRequestSubject('POST', `/1.0/${c}`, q('target=b')), {
      kind: 'create',
      target: 'b',
      placed: true,
    });
    assert.deepEqual(parseRequestSubject('PUT', `/1.0/${c}/c1/state`, q('project=p')), {
      kind: 'container',
      project: 'p',
      name: 'c1',
    });
    assert.equal(parseRequestSubject('GET', `/1.0/${c}`, q()), undefined);
  }
});

test('operations, custom volumes, and what any member serves', () => {
  const id = '0b9d6c1e-52f4-4a51-9d6e-2d7f1c9a0b11';
  assert.deepEqual(parseRequestSubject('GET', `/1.0/operations/${id}/wait`, q()), { kind: 'operation', id });
  assert.deepEqual(parseRequestSubject('GET', '/1.0/storage-pools/p/volumes/custom/v', q()), {
    kind: 'volume',
    pool: 'p',
    name: 'v',
  });
  assert.equal(parseRequestSubject('GET', '/1.0/networks', q()), undefined);
  assert.equal(parseRequestSubject('GET', '/1.0/operations/not-a-uuid', q()), undefined);
});
