/**
 * Database roles of the members that reach a cluster's database through the database tunnel (the embedded
 * engine's cluster): one login role per member, with a password of its own, member of the server's owner
 * role (so it reads and writes svcd's tables, and runs their migrations, as the owner does), made when the
 * member is accepted and dropped when it is removed. Role names are quoted identifiers, never user text
 * beyond a member name (letters, digits, dots and dashes).
 */
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../db/types.ts';

/** Every member role's name starts so: the tunnel lets only these log in. */
export const MEMBER_ROLE_PREFIX = 'svcd_member_';
/** The server's owner (private-postgres-args.ts PRIVATE_POSTGRES_USER): its privileges are the members'. */
const OWNER_ROLE = 'svcd';

/** A member's role name, within PostgreSQL's 63 bytes (a long name is hashed). */
export function memberRoleOf(member: string): string {
  const name =
    member.length <= 63 - MEMBER_ROLE_PREFIX.length
      ? member
      : createHash('sha256').update(member).digest('hex').slice(0, 32);
  return `${MEMBER_ROLE_PREFIX}${name}`;
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The member's role, made afresh with a new password (a role left by an earlier, failed join is replaced). */
export async function createMemberRole(tx: DbOrTx, member: string): Promise<{ user: string; password: string }> {
  const user = memberRoleOf(member);
  // Hex only: safe inside the literal (CREATE ROLE takes no bind parameters).
  const password = randomBytes(24).toString('hex');
  await tx.execute(sql.raw(`DROP ROLE IF EXISTS ${ident(user)}`));
  await tx.execute(sql.raw(`CREATE ROLE ${ident(user)} LOGIN PASSWORD '${password}' IN ROLE ${ident(OWNER_ROLE)}`));
  return { user, password };
}

/**
 * Drop the roles of members no longer in the cluster (force-removed, or left): their sessions end, what
 * they made (a migration run by a newer member) passes to the owner. Run by the serving member (the only
 * one whose role may drop roles), when it starts and when it accepts a member.
 */
export async function sweepMemberRoles(db: DbOrTx, clustered: readonly string[]): Promise<string[]> {
  const keep = new Set(clustered.map(memberRoleOf));
  const rows = (await db.execute(
    sql`select rolname from pg_roles where starts_with(rolname, ${MEMBER_ROLE_PREFIX})`,
  )) as unknown as { rolname: string }[];
  const gone = [...rows].map((r) => r.rolname).filter((r) => !keep.has(r));
  for (const user of gone) {
    await db.execute(sql`select pg_terminate_backend(pid) from pg_stat_activity where usename = ${user}`);
    await db.execute(sql.raw(`REASSIGN OWNED BY ${ident(user)} TO ${ident(OWNER_ROLE)}`));
    await db.execute(sql.raw(`DROP OWNED BY ${ident(user)}`));
    await db.execute(sql.raw(`DROP ROLE IF EXISTS ${ident(user)}`));
  }
  return gone;
}
