import { pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { createdAt, deviceMap, generation, stringMap } from './columns.ts';
import { projects } from './projects.ts';

/**
 * Profiles. Writers: `desired/profiles.ts`; `desired/projects.ts` creates and drops a project's own
 * `default` profile with the project (features.profiles), and `desired/storage-pools.ts` adds the root
 * disk to `default`'s at first start (ensureDefaultPool), each in its own transaction and bumping
 * `generation` when it changes an existing profile.
 */
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
