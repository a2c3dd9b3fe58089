import { boolean, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/**
 * Operations are views over generations: an operation created by a desired write names the
 * (target_kind, target_key, target_generation) it waits for; reconcilers settle it.
 * Imperative operations (exec, uploads, ...) have no target and are settled by their task.
 */
export const operations = pgTable(
  'operations',
  {
    id: uuid('id').primaryKey(),
    class: text('class').notNull(),
    description: text('description').notNull().default(''),
    statusCode: integer('status_code').notNull(),
    resources: jsonb('resources').$type<Record<string, string[]>>().notNull().default({}),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    mayCancel: boolean('may_cancel').notNull().default(false),
    err: text('err').notNull().default(''),
    project: text('project').notNull().default('default'),
    node: text('node').notNull(),
    targetKind: text('target_kind'),
    targetKey: text('target_key'),
    targetGeneration: integer('target_generation'),
    deadlineAt: timestamp('deadline_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    index('operations_target_idx').on(t.targetKind, t.targetKey),
    index('operations_status_idx').on(t.statusCode),
  ],
);
export type OperationRow = typeof operations.$inferSelect;
