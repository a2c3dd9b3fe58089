import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { validateDevices } from './devices.ts';
import { parseProxyAddress } from './devices-proxy.ts';

const refused = (dev: Record<string, string>, re: RegExp) =>
  assert.throws(
    () => validateDevices({ web: { type: 'proxy', ...dev } }),
    (e: Error) => e.name === 'ValidationError' && /Device "web" \(proxy\)/.test(e.message) && re.test(e.message),
  );
const ok = (dev: Record<string, string>) => validateDevices({ web: { type: 'proxy', ...dev } });

describe('proxy addresses', () => {
  test('t17 tcp, udp, IPv6 in brackets, ranges and lists', () => {
    assert.deepEqual(parseProxyAddress('tcp:127.0.0.1:80'), { kind: 'tcp', host: '127.0.0.1', family: 4, ports: [80] });
    assert.deepEqual(parseProxyAddress('udp:[::1]:10-12,20'), {
      kind: 'udp',
      host: '::1',
      family: 6,
      ports: [10, 11, 12, 20],
    });
    assert.deepEqual(parseProxyAddress('unix:/run/a.sock'), { kind: 'unix', path: '/run/a.sock', abstract: false });
    assert.deepEqual(parseProxyAddress('unix:@svc'), { kind: 'unix', path: 'svc', abstract: true });
  });
  test('t17 bad ones say why', () => {
    for (const [a, re] of [
      ['http:1.2.3.4:80', /tcp:, udp: or unix:/],
      ['tcp:::1:80', /brackets/],
      ['tcp:[1.2.3.4]:80', /bad address/],
      ['tcp:1.2.3.4:0', /1 to 65535/],
      ['tcp:1.2.3.4:90-80', /low to high/],
      ['tcp:1.2.3.4:1-2000', /too many/],
      ['tcp:host:80', /bad address/],
      ['unix:rel/path', /absolute/],
    ] as const)
      assert.match(parseProxyAddress(a) as string, re, a);
  });
});

describe('proxy device checks', () => {
  test('t17 good devices pass', () => {
    ok({ listen: 'tcp:127.0.0.1:8080', connect: 'tcp:127.0.0.1:80' });
    ok({ listen: 'tcp:0.0.0.0:80-82', connect: 'tcp:127.0.0.1:80-82', bind: 'host', proxy_protocol: 'true' });
    ok({ listen: 'tcp:0.0.0.0:80,81', connect: 'unix:/run/s.sock' });
    ok({
      listen: 'unix:/run/h.sock',
      connect: 'tcp:127.0.0.1:80',
      uid: '1000',
      gid: '1000',
      mode: '0660',
      'security.uid': '1000',
      'security.gid': '1000',
    });
    ok({ listen: 'tcp:127.0.0.1:8080', connect: 'tcp:10.0.0.2:80', nat: 'true' });
  });
  test('t17 refusals name the device and the key', () => {
    refused({ connect: 'tcp:127.0.0.1:80' }, /"listen" is required/);
    refused({ listen: 'tcp:127.0.0.1:80', connect: 'tcp:127.0.0.1:80', bogus: '1' }, /unknown property "bogus"/);
    refused({ listen: 'tcp:127.0.0.1:80', connect: 'tcp:127.0.0.1:80', bind: 'guest' }, /invalid "bind"/);
    refused({ listen: 'tcp:127.0.0.1:80', connect: 'tcp:1.2.3.4' }, /invalid "connect"/);
    refused({ listen: 'tcp:127.0.0.1:80-82', connect: 'tcp:127.0.0.1:80,81' }, /"connect" has 2 ports and "listen" 3/);
    refused({ listen: 'udp:127.0.0.1:80', connect: 'tcp:127.0.0.1:80' }, /udp only to udp/);
    refused({ listen: 'tcp:127.0.0.1:80', connect: 'udp:127.0.0.1:80' }, /udp only to udp/);
    refused(
      { listen: 'tcp:127.0.0.1:80', connect: 'tcp:127.0.0.1:80', mode: '0600' },
      /"mode" applies only to a unix listen/,
    );
    refused({ listen: 'unix:@abs', connect: 'tcp:127.0.0.1:80', uid: '1' }, /"uid" applies only/);
  });
  test('t17 nat refusals', () => {
    const nat = (dev: Record<string, string>, re: RegExp) => refused({ nat: 'true', ...dev }, re);
    nat({ listen: 'unix:/run/a', connect: 'tcp:10.0.0.2:80' }, /unix/);
    nat({ listen: 'tcp:0.0.0.0:80', connect: 'tcp:10.0.0.2:80' }, /wildcard/);
    nat({ listen: 'tcp:[::]:80', connect: 'tcp:[fd00::2]:80' }, /wildcard/);
    nat({ listen: 'tcp:127.0.0.1:80', connect: 'tcp:10.0.0.2:80', bind: 'container' }, /bind=host/);
    nat({ listen: 'tcp:127.0.0.1:80', connect: 'tcp:10.0.0.2:80', proxy_protocol: 'true' }, /proxy_protocol/);
    nat({ listen: 'tcp:127.0.0.1:80', connect: 'tcp:[fd00::2]:80' }, /address family/);
  });
});
