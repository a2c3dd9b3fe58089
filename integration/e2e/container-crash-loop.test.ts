/**
 * The crash loop backoff against the daemon as a process on real LXC: a container whose init is
 * killed (`kill -9` from the host) is started again at once the first time, then after 1 s, then
 * after 2 s, each on its own timer (not at the observer's next 5 s sample). `after` force-stops and
 * deletes every container, stops the daemon and removes the temp dirs, also on failure.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startBusyboxDaemon, teardownContainers, waitOp } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import type { Client } from '../support/http.ts';
import { lxcSkipReason } from '../support/lxc-host.ts';

const skip = await lxcSkipReason();
if (skip) console.log(`# skipping crash loop e2e tests: ${skip}`);

describe('crash loop backoff on real LXC', { skip }, () => {
  let d: Daemon;
  let api: Client;
  let imgDir: string;
  const state = (name: string) =>
    api.get(`/1.0/containers/${name}/state`).then((r) => r.json.metadata as { status: string; pid: number });

  /** Polls (every 50 ms, up to 15 s) until the container runs with an init other than `oldPid`; returns it and the time it took. */
  async function backAfter(name: string, oldPid: number, since: number): Promise<{ pid: number; ms: number }> {
    for (;;) {
      const s = await state(name);
      if (s.status === 'Running' && s.pid > 0 && s.pid !== oldPid) return { pid: s.pid, ms: Date.now() - since };
      if (Date.now() - since > 15_000) throw new Error(`${name} not running again after 15 s: ${JSON.stringify(s)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
  });

  after(async () => teardownContainers(d, api, [imgDir]));

  test('init killed three times in a row: back at once, then after ~1 s, then after ~2 s', async (t) => {
    const name = `loop${process.pid}`;
    await waitOp(api, await api.post('/1.0/containers', { name, source: { type: 'image', alias: 'bb' } }));
    await waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action: 'start' }));
    let { pid } = await backAfter(name, 0, Date.now());

    const took: number[] = [];
    for (const [min, max] of [
      [0, 3_000],
      [900, 2_500],
      [1_900, 3_500],
    ] as const) {
      const killedAt = Date.now();
      process.kill(pid, 'SIGKILL');
      const back = await backAfter(name, pid, killedAt);
      took.push(back.ms);
      assert.ok(
        back.ms >= min && back.ms < max,
        `running again after ${back.ms} ms, expected ${min}..${max} ms (all so far: ${took.join(', ')} ms)`,
      );
      pid = back.pid;
    }
    t.diagnostic(`running again after ${took.join(', ')} ms`);
    // The daemon said so too.
    const delays = d
      .output()
      .split('\n')
      .filter((l) => l.includes('"restartInMs"') && l.includes(name))
      .map((l) => (JSON.parse(l) as { restartInMs: number }).restartInMs);
    assert.deepEqual(delays, [0, 1_000, 2_000]);
  });
});
