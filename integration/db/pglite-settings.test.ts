/** The embedded database's own settings: small shared buffers (svcd's data is a few MiB; WASM memory never shrinks). */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import { openDatabase } from '../../src/db/open-database.ts';

test('PGlite runs with 16 MiB of shared buffers, set once in the database and kept across opens', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svcd-pglite-'));
  try {
    const show = async () => {
      const { db, close } = await openDatabase({ stateDir: dir });
      try {
        const r = (await db.execute(sql`show shared_buffers`)) as unknown as { rows: { shared_buffers: string }[] };
        return r.rows[0]!.shared_buffers;
      } finally {
        await close();
      }
    };
    assert.equal(await show(), '16MB');
    assert.match(
      await readFile(path.join(dir, 'database', 'postgresql.auto.conf'), 'utf8'),
      /^shared_buffers = '16MB'$/m,
    );
    assert.equal(await show(), '16MB', 'still set when opened again');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
