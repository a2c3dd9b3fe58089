import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { watchDevicePaths } from './watch-device-paths.ts';

let tmp = '';
before(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'svcd-watchdev-'));
});
after(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** The next change reported, or 'none' after `ms`. */
function nextChange(
  seen: { key: string; changed: string }[],
  ms = 1_000,
): Promise<{ key: string; changed: string } | 'none'> {
  const start = seen.length;
  return new Promise((resolve) => {
    const t0 = Date.now();
    const tick = setInterval(() => {
      if (seen.length > start) {
        clearInterval(tick);
        resolve(seen[start]!);
      } else if (Date.now() - t0 > ms) {
        clearInterval(tick);
        resolve('none');
      }
    }, 10);
  });
}

test('a watched path appearing and going is reported once per burst, other names in the directory are not', async () => {
  const seen: { key: string; changed: string }[] = [];
  const w = watchDevicePaths({ debounceMs: 50, onChange: (key, changed) => seen.push({ key, changed }) });
  try {
    const dir = path.join(tmp, 'a');
    await mkdir(dir);
    const node = path.join(dir, 'ttyX');
    w.watch('c1', [node]);
    let next = nextChange(seen, 400);
    await writeFile(path.join(dir, 'other'), '');
    assert.equal(await next, 'none', 'another entry of the directory is no change');
    next = nextChange(seen);
    await writeFile(node, '');
    await rm(node);
    await writeFile(node, '');
    assert.deepEqual(await next, { key: 'c1', changed: node });
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(seen.length, 1, 'one report for a burst');
    next = nextChange(seen);
    await rm(node);
    assert.deepEqual(await next, { key: 'c1', changed: node });
    // Unwatched: no more reports.
    w.watch('c1', []);
    next = nextChange(seen, 300);
    await writeFile(node, '');
    assert.equal(await next, 'none');
  } finally {
    w.close();
  }
});

test('a path under directories that do not exist yet is watched through its nearest ancestor', async () => {
  const seen: { key: string; changed: string }[] = [];
  const w = watchDevicePaths({ debounceMs: 30, onChange: (key, changed) => seen.push({ key, changed }) });
  try {
    const node = path.join(tmp, 'b', 'c', 'dev0');
    w.watch('c2', [node]);
    let next = nextChange(seen);
    await mkdir(path.join(tmp, 'b'));
    assert.equal(((await next) as { key: string }).key, 'c2', 'the first missing directory appearing is a change');
    next = nextChange(seen);
    await mkdir(path.join(tmp, 'b', 'c'));
    assert.equal(((await next) as { key: string }).key, 'c2', 'the watch moved down');
    next = nextChange(seen);
    await writeFile(node, '');
    assert.deepEqual(await next, { key: 'c2', changed: node });
  } finally {
    w.close();
  }
});

test('a directory path (ending in /) reports any entry of it appearing or going, also once the directory appears', async () => {
  const seen: { key: string; changed: string }[] = [];
  const w = watchDevicePaths({ debounceMs: 50, onChange: (key, changed) => seen.push({ key, changed }) });
  try {
    const bus = `${path.join(tmp, 'usb', '001')}/`;
    w.watch('c2', [bus]);
    let next = nextChange(seen, 300);
    await writeFile(path.join(tmp, 'unrelated'), '');
    assert.equal(await next, 'none', 'another entry beside the missing directory is no change');
    next = nextChange(seen);
    await mkdir(bus, { recursive: true });
    assert.deepEqual(await next, { key: 'c2', changed: bus }, 'the directory appearing');
    for (const name of ['003', '004']) {
      next = nextChange(seen);
      await writeFile(path.join(bus, name), '');
      assert.deepEqual(await next, { key: 'c2', changed: bus }, `${name} created in it`);
    }
    next = nextChange(seen);
    await rm(path.join(bus, '003'));
    assert.deepEqual(await next, { key: 'c2', changed: bus }, 'an entry removed');
  } finally {
    w.close();
  }
});
