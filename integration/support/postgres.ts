import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

/** URL of a PostgreSQL role that may create databases (set by scripts/test.sh). */
export const adminUrl = process.env.SVCD_TEST_PG_URL;

/** Create a throw-away database; returns its URL and a drop function. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!adminUrl)
    throw new Error('SVCD_TEST_PG_URL is not set: run the suite with scripts/test.sh (it starts PostgreSQL 15)');
  const name = `svcd_t_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const a = postgres(adminUrl!, { max: 1, onnotice: () => {} });
      try {
        // FORCE terminates what is still connected; a connection still starting up has no role yet and makes
        // it refuse ("must be a member of the role…", 42501): try again.
        for (let attempt = 1; ; attempt++) {
          try {
            await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
            break;
          } catch (e) {
            if ((e as { code?: string }).code !== '42501' || attempt >= 10) throw e;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
      } finally {
        await a.end({ timeout: 5 });
      }
    },
  };
}
