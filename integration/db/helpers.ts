import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { and, eq, sql, type SQL } from 'drizzle-orm';
import { localWrites } from '../../src/db/database-state.ts';
import type { Db, DbOrTx } from '../../src/db/types.ts';
import { ConflictError } from '../../src/desired/errors.ts';
import { operations, profiles, reconcileStatus, type OperationRow } from '../../src/desired/schema/index.ts';
import { statusFor } from '../../src/api/errors.ts';
import { createEventBus, type SvcEvent } from '../../src/events/index.ts';
import { createOperations, type Operations } from '../../src/operations/index.ts';
import { readOperation, type NewOperation } from '../../src/operations/operation-store.ts';
import { createManualClock } from '../../src/reconcilers/runtime/clock.ts';
import type { OpenTarget } from './targets.ts';

/** What each group of the store suite gets: the shared database and a way to open a fresh one. */
export interface SuiteContext {
  /** The suite's shared database (migrated, default project ensured). */
  db(): Db;
  open: OpenTarget;
}

/** Rows of a raw query, whichever driver (postgres.js returns an array, PGlite `{ rows }`). */
export async function query<T>(db: DbOrTx, q: SQL): Promise<T[]> {
  const r = (await db.execute(q)) as unknown;
  return (Array.isArray(r) ? r : (r as { rows: T[] }).rows) as T[];
}

/** The error a promise rejects with (fails the test if it fulfils). */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  let error: unknown;
  await assert.rejects(p, (e) => {
    error = e;
    return true;
  });
  return error;
}

/** Asserts the promise rejects with a ConflictError that the API answers with 409. */
export async function assertConflict(p: Promise<unknown>): Promise<void> {
  const e = await rejection(p);
  assert.ok(e instanceof ConflictError, `expected a ConflictError, got ${String(e)}`);
  assert.equal(statusFor(e).status, 409);
}

export const profileInput = (
  description = '',
  config: Record<string, string> = {},
  devices: Record<string, Record<string, string>> = {},
) => ({
  description,
  config,
  devices,
});

/** An operations service on a manual clock, recording every published operation event. */
export function makeOps(db: Db, node = 'node-a', startMs = Date.parse('2030-01-01T00:00:00Z')) {
  const bus = createEventBus({ location: node });
  const events: SvcEvent[] = [];
  bus.subscribe({ types: new Set(['operation']) }, (e) => events.push(e));
  const clock = createManualClock(startMs);
  const log = { warn: () => {}, error: () => {} };
  const ops = createOperations({ db, localWrites: localWrites(db), bus, clock, node, log });
  return { ops, bus, events, clock };
}

/**
 * The desired-write pattern: in one transaction, bump the profile's generation and insert the
 * operation that waits for it. Returns the committed operation and the new generation.
 */
export async function bumpProfileWithOperation(db: Db, ops: Operations, project: string, name: string) {
  return db.transaction(async (tx) => {
    const [p] = await tx
      .update(profiles)
      .set({ generation: sql`${profiles.generation} + 1` })
      .where(and(eq(profiles.project, project), eq(profiles.name, name)))
      .returning();
    assert.ok(p, `profile ${project}/${name} exists`);
    const op = await ops.insert(tx, {
      class: 'task',
      description: `Updating profile ${name}`,
      project,
      target: { kind: 'profile', key: `${project}/${name}`, generation: p.generation },
    });
    return { op, generation: p.generation };
  });
}

export async function mustReadOperation(db: DbOrTx, id: string): Promise<OperationRow> {
  const row = await readOperation(db, id);
  assert.ok(row, `operation ${id} exists`);
  return row;
}

export async function readStatus(db: DbOrTx, kind: string, key: string) {
  const [row] = await db
    .select()
    .from(reconcileStatus)
    .where(and(eq(reconcileStatus.kind, kind), eq(reconcileStatus.key, key)));
  return row;
}

/** An operation row with sensible defaults, for seeding the operation store directly. */
export function operationRow(p: Partial<NewOperation> & { createdAt: Date }): NewOperation {
  return {
    id: randomUUID(),
    class: 'task',
    description: 'seeded',
    statusCode: 103,
    project: 'default',
    node: 'node-a',
    updatedAt: p.createdAt,
    ...p,
  };
}

export async function seed(db: Db, rows: NewOperation[]): Promise<void> {
  await db.insert(operations).values(rows);
}

export const sorted = (xs: string[]) => [...xs].sort();
