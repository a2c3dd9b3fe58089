import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { runCli } from './run-cli.ts';

/** Run `svcd argv` in this process with captured output. */
async function cli(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env, out: (l) => void out.push(l), err: (l) => void err.push(l) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

test('--help lists every verb; an unknown verb or option is exit 2 with the usage', async () => {
  const help = await cli(['--help']);
  assert.equal(help.code, 0);
  for (const verb of ['daemon', 'waitready', 'shutdown', 'ui', 'version'])
    assert.match(help.out, new RegExp(`^  ${verb} `, 'm'));
  const unknown = await cli(['frobnicate']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.err, /unknown verb 'frobnicate'/);
  assert.match(unknown.err, /Usage: svcd/);
  assert.equal((await cli(['version', '--timeout', '3'])).code, 2, 'version takes no --timeout');
  assert.equal((await cli(['waitready', '--timeout', 'x'])).code, 2);
  const misplaced = await cli(['version', '--revoke-all']);
  assert.equal(misplaced.code, 2, 'only ui takes --revoke-all');
  assert.match(misplaced.err, /svcd version takes no --revoke-all/);
});

test('ui with no daemon: exit 1 naming the socket', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-cli-'));
  try {
    const r = await cli(['ui'], { SVCD_DIR: dir });
    assert.equal(r.code, 1);
    assert.match(r.err, new RegExp(`no daemon answers on ${dir}/unix.socket`));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('version prints package.json version', async () => {
  const pkg = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8'));
  assert.deepEqual(await cli(['version']), { code: 0, out: pkg.version, err: '' });
});

test('waitready with nothing listening: exit 1 naming the socket once the timeout has passed', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-cli-'));
  try {
    const t0 = Date.now();
    const r = await cli(['waitready', '--timeout', '0.4'], { SVCD_DIR: dir });
    const took = Date.now() - t0;
    assert.equal(r.code, 1);
    assert.match(r.err, new RegExp(`did not answer on ${path.join(dir, 'unix.socket')} within 0.4 s`));
    assert.ok(took >= 400 && took < 3_000, `gave up after the timeout (${took} ms)`);
    // A bad SVCD_DIR is the daemon's own settings error, exit 2.
    assert.equal((await cli(['waitready'], { SVCD_DIR: 'relative' })).code, 2);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('shutdown with no daemon: exit 0, says it is not running', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-cli-'));
  try {
    const r = await cli(['shutdown', '--timeout', '1'], { SVCD_DIR: dir });
    assert.equal(r.code, 0);
    assert.match(r.out, /not running/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
