import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  isTemplateName,
  isTemplateTarget,
  parseContainerMetadata,
  readableContainerMetadata,
} from './container-metadata.ts';

test('template names stay one file name in templates/; targets are absolute without ..', () => {
  for (const ok of ['hostname.tpl', 'a', 'cloud-init-user.tpl', 'x..y']) assert.ok(isTemplateName(ok), ok);
  for (const bad of ['', '.', '..', '.hidden', 'a/b', '../x', 'x\0', 'a'.repeat(256)])
    assert.ok(!isTemplateName(bad), bad);
  for (const ok of ['/etc/hostname', '/a b/c']) assert.ok(isTemplateTarget(ok), ok);
  for (const bad of ['etc/hostname', '/', '/etc/../x', '/x\0', '']) assert.ok(!isTemplateTarget(bad), bad);
});

test("a client's metadata is normalized; every problem is a 400 with a message", () => {
  assert.deepEqual(parseContainerMetadata({}), {
    architecture: '',
    creation_date: 0,
    expiry_date: 0,
    properties: {},
    templates: {},
  });
  assert.deepEqual(
    parseContainerMetadata({
      architecture: 'x86_64',
      creation_date: '12',
      properties: { n: 1 },
      templates: { '/etc/x': { when: ['start', 'start'], template: 'x.tpl' } },
    }),
    {
      architecture: 'x86_64',
      creation_date: 12,
      expiry_date: 0,
      properties: { n: '1' },
      templates: { '/etc/x': { when: ['start'], create_only: false, template: 'x.tpl', properties: {} } },
    },
  );
  for (const [doc, msg] of [
    [{ templates: { '/etc/x': {} } }, /needs a "template"/],
    [{ templates: { '/etc/x': { template: 'a', when: ['boot'] } } }, /Invalid trigger/],
    [{ templates: { '/etc/x': { template: 'a/b' } } }, /Invalid template file name/],
    [{ templates: { x: { template: 'a' } } }, /Invalid template target/],
    [{ templates: [] }, /map of target path/],
    [{ expiry_date: -1 }, /expiry_date/],
    [{ architecture: 3 }, /architecture/],
    [{ properties: { a: {} } }, /Property "a"/],
  ] as const)
    assert.throws(() => parseContainerMetadata(doc), msg);
});

test('metadata from an image keeps what is valid', () => {
  const m = readableContainerMetadata({
    architecture: 'x86_64',
    creation_date: 'bad',
    templates: { '/ok': { template: 'a', when: ['create'] }, '/bad': { template: '../a' } },
  });
  assert.equal(m.creation_date, 0);
  assert.deepEqual(Object.keys(m.templates), ['/ok']);
  assert.deepEqual(readableContainerMetadata('just text').templates, {});
});
