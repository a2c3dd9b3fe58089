import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readStartupMessage } from './postgres-startup.ts';

function startup(params: Record<string, string>): Buffer {
  const body = Buffer.from(
    `${Object.entries(params)
      .map(([k, v]) => `${k}\0${v}\0`)
      .join('')}\0`,
  );
  const head = Buffer.alloc(8);
  head.writeInt32BE(8 + body.length, 0);
  head.writeInt32BE(196_608, 4);
  return Buffer.concat([head, body]);
}

test('a whole startup message gives its parameters; a part of one asks for more', () => {
  const msg = startup({ user: 'svcd_member_b', database: 'postgres', application_name: 'svcd x' });
  const r = readStartupMessage(Buffer.concat([msg, Buffer.from('next')]));
  assert.deepEqual(r, {
    kind: 'startup',
    length: msg.length,
    params: { user: 'svcd_member_b', database: 'postgres', application_name: 'svcd x' },
  });
  assert.deepEqual(readStartupMessage(msg.subarray(0, 5)), { kind: 'incomplete' });
  assert.deepEqual(readStartupMessage(msg.subarray(0, msg.length - 1)), { kind: 'incomplete' });
});

test('an SSL request is told apart; other protocols and malformed messages are invalid', () => {
  const ssl = Buffer.alloc(8);
  ssl.writeInt32BE(8, 0);
  ssl.writeInt32BE(80_877_103, 4);
  assert.equal(readStartupMessage(ssl).kind, 'encryption-request');
  const http = Buffer.from('GET / HTTP/1.1\r\n\r\n');
  assert.equal(readStartupMessage(http).kind, 'invalid');
  const huge = startup({ user: 'x' });
  huge.writeInt32BE(1 << 20, 0);
  assert.equal(readStartupMessage(huge).kind, 'invalid');
  const odd = startup({ user: 'x' });
  odd[odd.length - 2] = 0x41; // the value's terminator replaced: "user", "xA" and no final pair end
  assert.equal(readStartupMessage(odd).kind, 'invalid');
});
