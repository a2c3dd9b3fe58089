import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { installQueryParsers, type ParserClient } from './pglite-parsers.ts';

test('per-query parsers are installed once and left out; the rows are the same; a disagreeing table keeps its own', async () => {
  const pg = new PGlite();
  try {
    const plain = new PGlite();
    const q = `select '2030-01-02 03:04:05+00'::timestamptz as t, '{"a":1}'::jsonb as j, 7 as n`;
    const asText = { 1184: (v: string) => v };
    const want = await plain.query(q, [], { parsers: asText });
    await plain.close();

    const client = pg as unknown as ParserClient;
    const calls: (object | undefined)[] = [];
    const query = client.query.bind(client);
    client.query = (sql, params, options) => (calls.push(options?.parsers), query(sql, params, options));
    installQueryParsers(client);

    assert.deepEqual((await pg.query(q, [], { parsers: asText })).rows, want.rows);
    assert.deepEqual(
      want.rows,
      [{ t: '2030-01-02 03:04:05+00', j: { a: 1 }, n: 7 }],
      'timestamptz as text, the rest parsed as usual',
    );
    assert.equal(calls.at(-1), undefined, 'the parsers were left out of the query');
    // Another table with the same parser: agrees, left out too.
    assert.deepEqual((await pg.query(q, [], { parsers: { 1184: (v: string) => v } })).rows, want.rows);
    assert.equal(calls.at(-1), undefined);
    // Inside a transaction as well.
    await pg.transaction(async (tx) => assert.deepEqual((await tx.query(q, [], { parsers: asText })).rows, want.rows));

    // A table that disagrees (timestamptz as a number) is passed with its query, and wins for it.
    const asNumber = { 1184: (v: string) => Date.parse(v) };
    const own = await pg.query<{ t: number }>(q, [], { parsers: asNumber });
    assert.equal(calls.at(-1), asNumber);
    assert.equal(own.rows[0]!.t, Date.parse('2030-01-02T03:04:05Z'));
    // ... and changed nothing installed.
    assert.deepEqual((await pg.query(q, [], { parsers: asText })).rows, want.rows);
  } finally {
    await pg.close();
  }
});
