import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { readSriov } from './read-sriov.ts';

let tmp = '';
after(() => rm(tmp, { recursive: true, force: true }));

test('t17 sriov probe: no capability, none enabled, enabled', async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 't17sriov-'));
  const dev = (n: string) => path.join(tmp, 'class/net', n, 'device');
  await mkdir(dev('a'), { recursive: true });
  await mkdir(dev('b'), { recursive: true });
  await writeFile(path.join(dev('b'), 'sriov_totalvfs'), '8\n');
  await writeFile(path.join(dev('b'), 'sriov_numvfs'), '0\n');
  await mkdir(dev('c'), { recursive: true });
  await writeFile(path.join(dev('c'), 'sriov_totalvfs'), '8\n');
  await writeFile(path.join(dev('c'), 'sriov_numvfs'), '2\n');
  const r = (n: string) => readSriov(n, { sysRoot: tmp });
  assert.match((await r('a')).missing!, /a\/device\/sriov_totalvfs \(the device has no SR-IOV capability\)/);
  assert.match((await r('b')).missing!, /no virtual functions enabled \(.*sriov_numvfs is 0, of 8\)/);
  assert.deepEqual(await r('c'), { ok: true });
  assert.equal((await r('nosuch')).ok, false);
  // This host's interfaces have none.
  assert.equal((await readSriov('lo')).ok, false);
});
