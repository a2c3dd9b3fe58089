import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { notifyArgs } from '../../src/host/systemd/notify-message.ts';
import { notifyHelperPath } from '../../src/host/systemd/sd-notify.ts';
import { listenNotify } from '../support/notify-listener.ts';

const run = promisify(execFile);

describe('svcd-notify (the C sd_notify helper) on the real kernel', () => {
  let dir: string;
  const sleeper = spawn('sleep', ['600'], { stdio: 'ignore' });
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-notify-'));
  });
  after(async () => {
    sleeper.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  for (const kind of ['a path', 'an abstract name'] as const) {
    test(`to ${kind}: the datagram carries the message and the credentials of the pid it names, not its own`, async () => {
      const address = kind === 'a path' ? path.join(dir, 'notify.sock') : `@svcd-test-${randomUUID()}`;
      const listener = await listenNotify(address);
      try {
        const pid = sleeper.pid!;
        await run(notifyHelperPath(), notifyArgs(address, pid, 'ready'));
        await run(notifyHelperPath(), notifyArgs(address, pid, 'stopping'));
        await listener.next((m) => m.message === 'STOPPING=1');
        const [uid, gid] = [process.getuid!(), process.getgid!()];
        assert.deepEqual(listener.messages, [
          { pid, uid, gid, message: `READY=1\nMAINPID=${pid}` },
          { pid, uid, gid, message: 'STOPPING=1' },
        ]);
      } finally {
        listener.close();
      }
    });
  }

  test('usage errors exit 2; nobody listening exits 1 with the reason', async () => {
    const code = async (args: string[]) =>
      run(notifyHelperPath(), args).then(
        () => 0,
        (e: { code: number; stderr: string }) => e,
      );
    assert.equal(((await code(['/x', '12'])) as { code: number }).code, 2);
    assert.equal(((await code(['/x', 'abc', 'READY=1'])) as { code: number }).code, 2);
    assert.equal(((await code(['relative', '12', 'READY=1'])) as { code: number }).code, 2);
    const none = (await code([path.join(dir, 'nobody.sock'), String(process.pid), 'READY=1'])) as {
      code: number;
      stderr: string;
    };
    assert.equal(none.code, 1);
    assert.match(none.stderr, /No such file or directory/);
  });
});
