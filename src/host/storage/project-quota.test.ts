import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseMountinfoLine } from './mountinfo.ts';
import { projectIdFor, projectQuotaArgs, projectQuotaSupport } from './project-quota.ts';

const mount = (line: string) => {
  const m = parseMountinfoLine(line);
  assert.ok(m);
  return m;
};

describe('projectQuotaSupport', () => {
  it('explains an ext4 root without prjquota', () => {
    const res = projectQuotaSupport(
      mount('27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard'),
      '/var/lib/svcd/storage-pools/default',
    );
    assert.deepEqual(res, {
      ok: false,
      reason: 'size needs project quotas: the filesystem at / (ext4) is not mounted with prjquota',
    });
  });

  it('accepts ext4 with prjquota and xfs with prjquota or pquota', () => {
    assert.deepEqual(projectQuotaSupport(mount('27 1 254:0 / / rw - ext4 /dev/vda rw,prjquota'), '/x'), {
      ok: true,
      mountPoint: '/',
      fsType: 'ext4',
    });
    assert.equal(
      projectQuotaSupport(mount('45 27 8:17 / /srv rw - xfs /dev/sdb1 rw,attr2,prjquota'), '/srv/p').ok,
      true,
    );
    assert.equal(projectQuotaSupport(mount('45 27 8:17 / /srv rw - xfs /dev/sdb1 rw,pquota'), '/srv/p').ok, true);
  });

  it('explains xfs without project quotas and filesystems that have none', () => {
    assert.deepEqual(projectQuotaSupport(mount('45 27 8:17 / /srv rw - xfs /dev/sdb1 rw,attr2'), '/srv/p'), {
      ok: false,
      reason: 'size needs project quotas: the filesystem at /srv (xfs) is not mounted with prjquota or pquota',
    });
    assert.deepEqual(projectQuotaSupport(mount('25 24 0:23 / /tmp rw - tmpfs tmpfs rw'), '/tmp/p'), {
      ok: false,
      reason: 'size needs project quotas: the filesystem at /tmp (tmpfs) does not support them (only xfs and ext4 do)',
    });
    assert.equal(projectQuotaSupport(undefined, '/x').ok, false);
  });
});

describe('project ids and argv', () => {
  it('derives a stable positive 31-bit id from the volume id', () => {
    const a = projectIdFor('2f1c7a52-4c1e-4a51-9c1b-0a9e0f3b7d11');
    assert.equal(a, projectIdFor('2f1c7a52-4c1e-4a51-9c1b-0a9e0f3b7d11'));
    assert.notEqual(a, projectIdFor('2f1c7a52-4c1e-4a51-9c1b-0a9e0f3b7d12'));
    for (const id of ['', 'a', 'b', 'x'.repeat(100)]) {
      const n = projectIdFor(id);
      assert.ok(Number.isInteger(n) && n >= 1 && n < 2 ** 31, `${id} → ${n}`);
    }
  });

  it('builds chattr and setquota argv (hard block limit in KiB, 0 clears)', () => {
    assert.deepEqual(projectQuotaArgs.chattr(42, '/p/custom/v'), ['+P', '-p', '42', '/p/custom/v']);
    assert.deepEqual(projectQuotaArgs.setquota(42, 50 * 2 ** 20, '/srv'), ['-P', '42', '0', '51200', '0', '0', '/srv']);
    assert.deepEqual(projectQuotaArgs.setquota(42, 1000, '/srv'), ['-P', '42', '0', '1', '0', '0', '/srv']);
    assert.deepEqual(projectQuotaArgs.setquota(42, undefined, '/srv'), ['-P', '42', '0', '0', '0', '0', '/srv']);
  });
});
