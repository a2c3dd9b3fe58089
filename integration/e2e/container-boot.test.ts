import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { startBusyboxDaemon } from '../support/container-env.ts';
import type { Daemon } from '../support/daemon.ts';
import { cleanupHostUnder } from '../support/host-cleanup.ts';
import { eventually, type Client } from '../support/http.ts';
import { monitordFor } from '../support/lxc-host.ts';

const run = promisify(execFile);

async function waitOp(api: Client, res: { status: number; json: any; text: string }) {
  assert.equal(res.status, 202, res.text);
  const done = await api.get(`${res.json.operation}/wait?timeout=120`);
  assert.equal(done.json.metadata.status, 'Success', done.json.metadata.err);
}

describe('boot: autostart, priority order and delay; host shutdown by stop priority', () => {
  let d: Daemon;
  let api: Client;
  let imgDir: string;
  const lxcPath = () => path.join(d.stateDir, 'containers');
  /** LXC state of every container by name (LXC knows them by id; the config names the host). */
  async function lxcStates(): Promise<Record<string, string>> {
    const { stdout } = await run('lxc-ls', ['-P', lxcPath(), '-f', '-F', 'NAME,STATE']);
    const out: Record<string, string> = {};
    for (const line of stdout.split('\n').slice(1)) {
      const [id, state] = line.trim().split(/\s+/);
      if (!id || !state) continue;
      const cfg = await readFile(path.join(lxcPath(), id, 'config'), 'utf8');
      out[/^lxc.uts.name = (.*)$/m.exec(cfg)![1]!] = state;
    }
    return out;
  }
  const started = async (name: string) =>
    Date.parse((await api.get(`/1.0/containers/${name}`)).json.metadata.last_used_at);

  before(async () => {
    ({ d, api, imgDir } = await startBusyboxDaemon());
    const make = async (name: string, config: Record<string, string>, running: boolean) => {
      await waitOp(api, await api.post('/1.0/containers', { name, config, source: { type: 'image', alias: 'bb' } }));
      if (running) await waitOp(api, await api.put(`/1.0/containers/${name}/state`, { action: 'start' }));
    };
    await make(
      'always',
      {
        'boot.autostart': 'true',
        'boot.autostart.priority': '10',
        'boot.autostart.delay': '2',
        'boot.stop.priority': '1',
      },
      false,
    );
    await make('never', { 'boot.autostart': 'false' }, true);
    await make(
      'last-up',
      { 'boot.autostart.priority': '5', 'boot.stop.priority': '5', 'boot.host_shutdown_timeout': '10' },
      true,
    );
    await make('last-down', {}, false);
  });
  after(async () => {
    if (d?.proc.exitCode !== null || d?.proc.signalCode !== null) await d?.restart().catch(() => {});
    const list = (await api?.get('/1.0/containers').catch(() => undefined))?.json?.metadata;
    for (const c of Array.isArray(list) ? list : []) {
      await api
        .put(`${c}/state`, { action: 'stop', force: true })
        .then((r) => api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
      await api
        .delete(c)
        .then((r) => api.get(`${r.json.operation}/wait?timeout=60`))
        .catch(() => {});
    }
    await d?.stop().catch(() => {});
    if (d) {
      for (const p of await monitordFor(lxcPath())) process.kill(p.pid, 'SIGTERM');
      await cleanupHostUnder(d.stateDir);
    }
    await d?.destroy();
    await rm(imgDir, { recursive: true, force: true });
  });

  test('a clean daemon stop (SIGTERM) leaves containers running', async () => {
    assert.deepEqual(await lxcStates(), {
      always: 'STOPPED',
      never: 'RUNNING',
      'last-up': 'RUNNING',
      'last-down': 'STOPPED',
    });
    assert.equal(await d.stop(), 0);
    assert.deepEqual(await lxcStates(), {
      always: 'STOPPED',
      never: 'RUNNING',
      'last-up': 'RUNNING',
      'last-down': 'STOPPED',
    });
  });

  test('after a simulated host reboot: autostart true always, false never, unset the last desired; by priority with the delay', async () => {
    for (const id of await readdir(lxcPath())) await run('lxc-stop', ['-k', '-n', id, '-P', lxcPath()]).catch(() => {});
    await d.restart();
    await eventually(
      async () => {
        const s = await lxcStates();
        return s.always === 'RUNNING' && s['last-up'] === 'RUNNING';
      },
      'the autostart containers to run',
      60_000,
    );
    const s = await lxcStates();
    assert.equal(s.never, 'STOPPED');
    assert.equal(s['last-down'], 'STOPPED');
    // Desired state follows: "never" is now desired stopped and is not restarted by the observers.
    assert.equal((await api.get('/1.0/containers/never')).json.metadata.status, 'Stopped');
    const [a, b] = [await started('always'), await started('last-up')];
    assert.ok(b - a >= 1_900, `priority 10 first, then priority 5 at least 2 s later (${b - a} ms)`);
  });

  test('a host shutdown (SIGPWR) stops every container by boot.stop.priority, and they come back at the next start', async () => {
    const exit = await new Promise<number | null>((resolve) => {
      d.proc.once('exit', (code) => resolve(code));
      d.proc.kill('SIGPWR');
    });
    assert.equal(exit, 0);
    assert.deepEqual(await lxcStates(), {
      always: 'STOPPED',
      never: 'STOPPED',
      'last-up': 'STOPPED',
      'last-down': 'STOPPED',
    });
    const log = d.output();
    const order = [...log.matchAll(/"priority":(\d+),"containers":\[([^\]]*)\]/g)].map((m) => `${m[1]}:${m[2]}`);
    assert.deepEqual(order, ['5:"last-up"', '1:"always"']);
    await d.restart();
    await eventually(
      async () => {
        const st = await lxcStates();
        return st.always === 'RUNNING' && st['last-up'] === 'RUNNING' ? st : undefined;
      },
      'desired-running containers back after the host shutdown',
      60_000,
    );
    assert.equal((await lxcStates()).never, 'STOPPED');
  });
});
