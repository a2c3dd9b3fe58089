/**
 * Debian's lxc CLI (5.0.2) and python3-pylxd (2.2.10) on svcd's networks (both refuse every network
 * call unless the server announces the `network` extension; lxc also needs `network_state` for `info`
 * and `network_leases` for `list-leases`). Test networks: NAT off, no IPv6, no routing. pylxd 2.2.10's Network.rename() POSTs to /1.0/networks (a create, on LXD too): not used.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { startDaemon, type Daemon } from '../support/daemon.ts';
import { client, type Client } from '../support/http.ts';
import { lxcCli, type LxcCli } from '../support/lxc-cli.ts';

const run = promisify(execFile);
const tag = process.pid % 10000;
const hostBridge = `t16k${tag}`;
const net = `t16c${tag}`;
const renamed = `t16d${tag}`;
const pyNet = `t16p${tag}`;
const SAFE = ['ipv4.nat=false', 'ipv4.routing=false', 'ipv6.address=none'];

const PYLXD = String.raw`
import json, sys
import pylxd
from pylxd import exceptions
c = pylxd.Client()
step, name, host_bridge = sys.argv[1], sys.argv[2], sys.argv[3]
def err(fn):
    try:
        fn()
    except exceptions.LXDAPIException as e:
        return {'status': e.response.status_code, 'message': str(e)}
    return None
def show(n):
    return {'name': n.name, 'description': n.description, 'type': n.type, 'config': n.config, 'managed': n.managed, 'used_by': n.used_by}
if step == 'read':
    out = {'names': sorted(n.name for n in c.networks.all()), 'lo': show(c.networks.get('lo')), 'bridge': show(c.networks.get(host_bridge)),
           'exists': c.networks.exists('lo'), 'missing': c.networks.exists('t16none'),
           'state': c.api.networks['lo'].state.get().json()['metadata']}
elif step == 'lifecycle':
    n = c.networks.create(name, description='from pylxd', config={'ipv4.nat': 'false', 'ipv4.routing': 'false', 'ipv6.address': 'none'})
    made = show(n)
    n.config = dict(n.config, **{'ipv4.dhcp.expiry': '3h'})
    n.description = 'saved'
    n.save()
    saved = show(c.networks.get(name))
    dup = err(lambda: c.networks.create(name, config={'ipv4.nat': 'false', 'ipv6.address': 'none'}))
    bad = err(lambda: c.networks.create(name + 'x', config={'ipv4.colour': 'red'}))
    c.networks.get(name).delete()
    out = {'made': made, 'saved': saved, 'dup': dup, 'bad': bad, 'gone': c.networks.exists(name)}
print(json.dumps(out))
`;

function pylxd(stateDir: string, step: string): Promise<any> {
  return new Promise((resolve, reject) => {
    execFile(
      '/usr/bin/python3',
      ['-c', PYLXD, step, pyNet, hostBridge],
      { env: { PATH: '/usr/bin:/bin', LXD_DIR: stateDir, PYTHONDONTWRITEBYTECODE: '1' }, timeout: 120_000 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`pylxd step ${step} failed: ${err.message}\n${stderr}`));
        try {
          resolve(JSON.parse(stdout.trim().split('\n').pop() ?? ''));
        } catch {
          reject(new Error(`pylxd step ${step} printed no JSON:\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}

describe('lxc network and pylxd networks on svcd', () => {
  let d: Daemon;
  let api: Client;
  let lxc: LxcCli;
  before(async () => {
    await run('ip', ['link', 'add', hostBridge, 'type', 'bridge']);
    d = await startDaemon();
    api = client({ socketPath: d.socketPath });
    lxc = await lxcCli(d.stateDir);
  });
  after(async () => {
    for (const n of [net, renamed, pyNet]) await api?.delete(`/1.0/networks/${n}`).catch(() => {});
    await lxc?.cleanup();
    await d?.destroy().catch(() => {});
    for (const n of [hostBridge, net, renamed, pyNet]) await run('ip', ['link', 'delete', n]).catch(() => {});
  });

  test('lxc network list / show / info on host interfaces; refusals print the daemon message', async () => {
    const rows = (await lxc.ok(['network', 'list', '--format', 'csv']))
      .trim()
      .split('\n')
      .map((l) => l.split(','));
    // The CLI itself leaves loopback and unknown interfaces out of the list.
    assert.deepEqual(
      rows.find((r) => r[0] === hostBridge)?.slice(0, 3),
      [hostBridge, 'bridge', 'NO'],
      JSON.stringify(rows),
    );
    assert.ok(!rows.some((r) => r[0] === 'lo'));
    const shown = parseYaml(await lxc.ok(['network', 'show', 'lo']));
    assert.equal(shown.managed, false);
    assert.equal(shown.type, 'loopback');
    const info = await lxc.ok(['network', 'info', 'lo']);
    assert.match(info, /loopback/);
    assert.match(info, /127\.0\.0\.1/);
    assert.match(await lxc.fail(['network', 'create', 't16u', 'ipv4.colour=red', ...SAFE]), /ipv4\.colour/);
    assert.match(await lxc.fail(['network', 'create', 't16u', 'bridge.mode=fan', ...SAFE]), /fan kernel patch/);
    assert.match(await lxc.fail(['network', 'create', 'lo', ...SAFE]), /host interface/);
    // The CLI refuses this itself ("Only managed networks can be modified").
    assert.match(await lxc.fail(['network', 'set', 'lo', 'ipv4.nat', 'true']), /managed network/);
    assert.match(await lxc.fail(['network', 'show', 't16none']), /not found/i);
  });

  test('pylxd reads networks: all, get, exists, and the state through its api tree', async () => {
    const out = await pylxd(d.stateDir, 'read');
    assert.ok(out.names.includes('lo') && out.names.includes(hostBridge), JSON.stringify(out.names));
    assert.deepEqual(
      { managed: out.lo.managed, type: out.lo.type, config: out.lo.config },
      { managed: false, type: 'loopback', config: {} },
    );
    assert.equal(out.bridge.type, 'bridge');
    assert.equal(out.exists, true);
    assert.equal(out.missing, false);
    assert.equal(out.state.type, 'loopback');
  });

  test('lxc network create / set / get / list-leases / rename / delete', async () => {
    await lxc.ok(['network', 'create', net, ...SAFE]);
    const shown = parseYaml(await lxc.ok(['network', 'show', net]));
    assert.equal(shown.managed, true);
    assert.equal(shown.status, 'Created');
    assert.match(shown.config['ipv4.address'], /^10\.\d+\.\d+\.1\/24$/);
    await lxc.ok(['network', 'set', net, 'ipv4.dhcp.expiry', '2h']);
    assert.equal((await lxc.ok(['network', 'get', net, 'ipv4.dhcp.expiry'])).trim(), '2h');
    assert.match(await lxc.fail(['network', 'set', net, 'ipv4.dhcp.ranges', '1.2.3.4-1.2.3.9']), /ipv4\.dhcp\.ranges/);
    await lxc.ok(['network', 'unset', net, 'ipv4.dhcp.expiry']);
    assert.equal((await lxc.ok(['network', 'get', net, 'ipv4.dhcp.expiry'])).trim(), '');
    assert.equal((await lxc.ok(['network', 'list-leases', net, '--format', 'csv'])).trim(), '');
    assert.match(
      await lxc.ok(['network', 'info', net]),
      new RegExp(shown.config['ipv4.address'].replace(/\/24$/, '').replace(/\./g, '\\.')),
    );
    const row = (await lxc.ok(['network', 'list', '--format', 'csv'])).split('\n').find((l) => l.startsWith(`${net},`));
    assert.match(row ?? '', new RegExp(`^${net},bridge,YES,`));
    await lxc.ok(['network', 'rename', net, renamed]);
    assert.match(await lxc.fail(['network', 'show', net]), /not found/i);
    await lxc.ok(['network', 'delete', renamed]);
    assert.match(await lxc.fail(['network', 'show', renamed]), /not found/i);
  });

  test('pylxd networks.create, network.save, delete; duplicate and bad keys raise with the daemon message', async () => {
    const out = await pylxd(d.stateDir, 'lifecycle');
    assert.equal(out.made.managed, true);
    assert.equal(out.made.description, 'from pylxd');
    assert.equal(out.saved.description, 'saved');
    assert.equal(out.saved.config['ipv4.dhcp.expiry'], '3h');
    assert.equal(out.dup.status, 409);
    assert.equal(out.bad.status, 400);
    assert.match(out.bad.message, /ipv4\.colour/);
    assert.equal(out.gone, false);
  });
});
