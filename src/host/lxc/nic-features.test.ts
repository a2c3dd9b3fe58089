import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { probeNicFeature } from './nic-features.ts';

test('vlan: present with /proc/net/vlan or an 8021q module, else missing with the reason', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'nicfeat-'));
  try {
    const opts = { procRoot: path.join(root, 'proc'), modulesRoot: path.join(root, 'modules'), release: '6.1.0' };
    const none = await probeNicFeature('vlan', opts);
    assert.equal(none.ok, false);
    assert.match(none.missing!, /802\.1q/);
    mkdirSync(path.join(root, 'modules/6.1.0'), { recursive: true });
    writeFileSync(path.join(root, 'modules/6.1.0/modules.dep'), 'kernel/net/8021q/8021q.ko: kernel/net/802/garp.ko\n');
    assert.deepEqual(await probeNicFeature('vlan', opts), { ok: true });
    rmSync(path.join(root, 'modules'), { recursive: true });
    mkdirSync(path.join(root, 'proc/net/vlan'), { recursive: true });
    assert.deepEqual(await probeNicFeature('vlan', opts), { ok: true });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
