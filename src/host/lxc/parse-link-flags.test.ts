import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseLinkFlags } from './parse-link-flags.ts';

test('parseLinkFlags: administrative state from IFF_UP, type from the flags, as LXD', () => {
  // a bridge svcd brought up, no port yet (operstate down / NO-CARRIER): up
  assert.deepEqual(parseLinkFlags('0x1003\n'), { state: 'up', type: 'broadcast' });
  // a bridge made by hand and never set up
  assert.deepEqual(parseLinkFlags('0x1002'), { state: 'down', type: 'broadcast' });
  assert.deepEqual(parseLinkFlags('0x9'), { state: 'up', type: 'loopback' });
  // a GRE tunnel: POINTOPOINT|NOARP|UP
  assert.deepEqual(parseLinkFlags('0x91'), { state: 'up', type: 'point-to-point' });
  // no broadcast, no point-to-point (a tun device, say)
  assert.deepEqual(parseLinkFlags('0x1080'), { state: 'down', type: 'unknown' });
  assert.equal(parseLinkFlags(''), undefined);
  assert.equal(parseLinkFlags('zz'), undefined);
});
