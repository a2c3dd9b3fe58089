import { type AnyColumn, type SQL, sql } from 'drizzle-orm';

/** A `member_config` jsonb column with `member`'s values merged in (storage_pools and networks share the shape). */
export const withMemberValues = (column: AnyColumn, member: string, values: Record<string, string>): SQL =>
  sql`${column} || jsonb_build_object(${member}::text, ${JSON.stringify(values)}::jsonb)`;

/** The column with member `from`'s values moved to `to` (a rename), or dropped (`to` '': a removal). */
export const withMemberMoved = (column: AnyColumn, from: string, to: string): SQL =>
  to
    ? sql`(${column} - ${from}::text) || jsonb_build_object(${to}::text, ${column} -> ${from}::text)`
    : sql`${column} - ${from}::text`;
