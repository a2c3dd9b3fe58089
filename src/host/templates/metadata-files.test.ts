import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import {
  listTemplateFiles,
  readMetadataFile,
  readTemplateFile,
  removeTemplateFile,
  writeMetadataFile,
  writeTemplateFile,
} from './metadata-files.ts';

let base: string;
before(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'svcd-mdfiles-'));
});
after(() => rm(base, { recursive: true, force: true }));

const empty = { architecture: '', creation_date: 0, expiry_date: 0, properties: {}, templates: {} };

test("metadata.yaml: absent is empty; written and read back; invalid parts of an image's file are left out", async () => {
  const vol = path.join(base, 'v1');
  await mkdir(vol);
  assert.deepEqual(await readMetadataFile(vol), empty);
  const m = {
    architecture: 'x86_64',
    creation_date: 5,
    expiry_date: 0,
    properties: { os: 'x' },
    templates: { '/etc/a': { when: ['start' as const], create_only: false, template: 'a.tpl', properties: {} } },
  };
  await writeMetadataFile(vol, m);
  assert.deepEqual(await readMetadataFile(vol), m);
  await writeFile(
    path.join(vol, 'metadata.yaml'),
    'architecture: x86_64\ncreation_date: 7\ntemplates:\n  /etc/ok: {when: [create], template: ok.tpl}\n  /etc/bad: {when: [reboot], template: b.tpl}\n  rel: {template: c.tpl}\n',
  );
  assert.deepEqual(Object.keys((await readMetadataFile(vol)).templates), ['/etc/ok']);

  // Two volumes with the same file (two containers of one image): each read is a copy of its own.
  const vol2 = path.join(base, 'v1-copy');
  await mkdir(vol2);
  await writeMetadataFile(vol2, m);
  const a = await readMetadataFile(vol2);
  a.properties.os = 'changed by a reader';
  a.templates['/etc/a']!.when.push('copy');
  assert.deepEqual(await readMetadataFile(vol2), m);
  assert.deepEqual(await readMetadataFile(vol), {
    ...empty,
    architecture: 'x86_64',
    creation_date: 7,
    templates: { '/etc/ok': { when: ['create'], create_only: false, template: 'ok.tpl', properties: {} } },
  });
  await writeMetadataFile(vol2, { ...m, creation_date: 9 });
  assert.equal((await readMetadataFile(vol2)).creation_date, 9, 'a changed file reads changed');
});

test('links are never followed: a linked metadata.yaml reads as empty and is replaced, a linked templates/ is refused', async () => {
  const vol = path.join(base, 'v2');
  const elsewhere = path.join(base, 'elsewhere');
  await mkdir(vol);
  await mkdir(elsewhere);
  await writeFile(path.join(elsewhere, 'metadata.yaml'), 'architecture: x86_64\ncreation_date: 9\n');
  await symlink(path.join(elsewhere, 'metadata.yaml'), path.join(vol, 'metadata.yaml'));
  assert.deepEqual(await readMetadataFile(vol), empty);
  await writeMetadataFile(vol, { ...empty, architecture: 'aarch64' });
  assert.equal(
    await readFile(path.join(elsewhere, 'metadata.yaml'), 'utf8'),
    'architecture: x86_64\ncreation_date: 9\n',
  );
  assert.ok((await lstat(path.join(vol, 'metadata.yaml'))).isFile());
  await symlink(elsewhere, path.join(vol, 'templates'));
  await assert.rejects(listTemplateFiles(vol), /not a directory/);
  await assert.rejects(writeTemplateFile(vol, 'x.tpl', Buffer.from('x')), /not a directory/);
  await assert.rejects(readTemplateFile(vol, 'metadata.yaml'), /not a directory/);
});

test('template files: create, replace, list, read, remove; a linked template file is not read', async () => {
  const vol = path.join(base, 'v3');
  await mkdir(vol);
  assert.deepEqual(await listTemplateFiles(vol), []);
  await writeTemplateFile(vol, 'b.tpl', Buffer.from('1'));
  await writeTemplateFile(vol, 'a.tpl', Buffer.from('2'));
  await writeTemplateFile(vol, 'b.tpl', Buffer.from('3'));
  assert.deepEqual(await listTemplateFiles(vol), ['a.tpl', 'b.tpl']);
  assert.equal((await readTemplateFile(vol, 'b.tpl'))?.toString(), '3');
  await symlink('/etc/passwd', path.join(vol, 'templates/link.tpl'));
  assert.equal(await readTemplateFile(vol, 'link.tpl'), undefined);
  assert.deepEqual(await listTemplateFiles(vol), ['a.tpl', 'b.tpl']);
  assert.equal(await removeTemplateFile(vol, 'link.tpl'), false);
  assert.equal(await removeTemplateFile(vol, 'a.tpl'), true);
  assert.equal(await removeTemplateFile(vol, 'a.tpl'), false);
  await assert.rejects(writeTemplateFile(vol, '../x', Buffer.from('x')), /invalid template name/);
});
