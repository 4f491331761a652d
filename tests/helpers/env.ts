/** How the test run reaches its services; decided once by global-setup from the environment. */
export const PG_URL = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '') ? process.env.DATABASE_URL! : undefined;
export const REDIS_URL = process.env.REDIS_URL || undefined;
export const onPostgres = PG_URL !== undefined;

/** Replaces the database name of a postgres URL. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}
