import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { drizzle } from 'drizzle-orm/postgres-js';
import { sql as q } from 'drizzle-orm';
import { pipelineBegin, type ReservingClient } from '../../src/db/pipelined-begin.ts';
import { adminUrl, createTestDatabase } from '../support/postgres.ts';

// Against a real PostgreSQL (a throw-away database), as openDatabase uses it: a postgres.js pool under drizzle.
const url = adminUrl;
const table = 'pipelined_begin';
let made: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
let client: ReturnType<typeof postgres> | undefined;
let db: ReturnType<typeof drizzle> | undefined;

before(async () => {
  if (!url) return;
  made = await createTestDatabase();
  client = postgres(made.url, { max: 4, onnotice: () => {} });
  pipelineBegin(client as unknown as ReservingClient);
  db = drizzle(client);
  await db.execute(q.raw(`create table ${table} (id int primary key, v text not null)`));
});
after(async () => {
  if (!db) return;
  await client!.end({ timeout: 5 });
  await made?.drop();
});

const rows = async () => (await db!.execute(q.raw(`select id, v from ${table} order by id`))).map((r) => [r.id, r.v]);
const insert = (tx: Pick<NonNullable<typeof db>, 'execute'>, id: number, v: string) =>
  tx.execute(q.raw(`insert into ${table} values (${id}, '${v}')`));

test('a transaction commits its statements; a throw rolls every one back', {
  skip: !url && 'SVCD_TEST_PG_URL is not set',
}, async () => {
  await db!.transaction(async (tx) => {
    await insert(tx, 1, 'a');
    await insert(tx, 2, 'b');
  });
  await assert.rejects(
    db!.transaction(async (tx) => {
      await insert(tx, 3, 'c');
      throw new Error('changed my mind');
    }),
    /changed my mind/,
  );
  assert.deepEqual(await rows(), [
    [1, 'a'],
    [2, 'b'],
  ]);
  // It really was one transaction: another connection did not see the first insert before the commit.
  await db!.transaction(async (tx) => {
    await insert(tx, 4, 'd');
    const seen = await client!.unsafe(`select count(*)::int as n from ${table} where id = 4`);
    assert.equal(seen[0]!.n, 0);
  });
  assert.deepEqual((await rows()).length, 3);
});

test('a failed statement fails the transaction even when the callback caught it: nothing is written', {
  skip: !url && 'SVCD_TEST_PG_URL is not set',
}, async () => {
  const before = await rows();
  await assert.rejects(
    db!.transaction(async (tx) => {
      await insert(tx, 10, 'x');
      await insert(tx, 1, 'duplicate').catch(() => undefined);
    }),
    (e: { code?: string }) => e.code === '23505',
  );
  assert.deepEqual(await rows(), before);
});

test('a nested transaction is a savepoint: its failure is undone alone', {
  skip: !url && 'SVCD_TEST_PG_URL is not set',
}, async () => {
  await db!.transaction(async (tx) => {
    await insert(tx, 20, 'outer');
    await assert.rejects(tx.transaction(async (sp) => insert(sp, 1, 'duplicate')));
    await tx.transaction(async (sp) => insert(sp, 21, 'inner'));
  });
  assert.deepEqual(
    (await rows()).filter(([id]) => Number(id) >= 20),
    [
      [20, 'outer'],
      [21, 'inner'],
    ],
  );
});

test('concurrent transactions on the pool each commit whole', {
  skip: !url && 'SVCD_TEST_PG_URL is not set',
}, async () => {
  await Promise.all(
    Array.from({ length: 24 }, (_, i) =>
      db!.transaction(async (tx) => {
        await insert(tx, 100 + i, 'p');
        await insert(tx, 200 + i, 'q');
      }),
    ),
  );
  assert.equal((await rows()).filter(([id]) => Number(id) >= 100).length, 48);
});

test('a callback that leaves every statement in flight: COMMIT is sent before BEGIN or any statement is answered', {
  skip: !url && 'SVCD_TEST_PG_URL is not set',
}, async () => {
  // What the transaction's connection was asked, and when each answer came, in order.
  const events: string[] = [];
  const reserve = client!.reserve.bind(client!);
  const patched = client as unknown as { reserve: () => Promise<ReservedLike> };
  type ReservedLike = { unsafe(text: string, ...rest: unknown[]): PromiseLike<unknown> };
  patched.reserve = async () => {
    const conn = (await reserve()) as unknown as ReservedLike;
    const unsafe = conn.unsafe.bind(conn);
    conn.unsafe = (text, ...rest) => {
      const word = text.split(' ')[0]!;
      events.push(`sent ${word}`);
      const q = unsafe(text, ...rest) as PromiseLike<unknown> & { then: PromiseLike<unknown>['then'] };
      const then = q.then.bind(q);
      q.then = (ok, ko) => then((v) => (events.push(`answered ${word}`), ok ? ok(v) : v) as never, ko as never);
      return q;
    };
    return conn;
  };
  try {
    await db!.transaction(async (tx) => {
      void Promise.all([insert(tx, 30, 'e'), insert(tx, 31, 'f')]).catch(() => {});
    });
  } finally {
    patched.reserve = reserve as never;
  }
  assert.deepEqual(
    (await rows()).filter(([id]) => Number(id) >= 30 && Number(id) < 40),
    [
      [30, 'e'],
      [31, 'f'],
    ],
  );
  const firstAnswer = events.findIndex((e) => e.startsWith('answered'));
  assert.ok(
    events.indexOf('sent commit') >= 0 && events.indexOf('sent commit') < firstAnswer,
    `COMMIT sent before any answer: ${events.join(', ')}`,
  );
});
