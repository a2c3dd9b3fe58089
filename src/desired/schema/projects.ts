import { pgTable, text } from 'drizzle-orm/pg-core';
import { createdAt, generation, stringMap } from './columns.ts';

export const projects = pgTable('projects', {
  name: text('name').primaryKey(),
  description: text('description').notNull().default(''),
  config: stringMap('config'),
  generation: generation(),
  createdAt: createdAt(),
});
export type ProjectRow = typeof projects.$inferSelect;
