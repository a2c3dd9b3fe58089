import { pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { createdAt, deviceMap, generation, stringMap } from './columns.ts';
import { projects } from './projects.ts';

export const profiles = pgTable(
  'profiles',
  {
    project: text('project')
      .notNull()
      .references(() => projects.name, { onUpdate: 'cascade', onDelete: 'cascade' }),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    config: stringMap('config'),
    devices: deviceMap('devices'),
    generation: generation(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.project, t.name] })],
);
export type ProfileRow = typeof profiles.$inferSelect;
