import { fileURLToPath } from 'node:url';

export const CACHE_DIR = fileURLToPath(new URL('../.cache/', import.meta.url));
export const PGLITE_SNAPSHOT = `${CACHE_DIR}pglite-migrated.tar`;
export const TEMPLATE_DB = 'relay_template';

export function withDatabaseName(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Which database the suite runs on: the PostgreSQL server of TEST_DATABASE_URL, or the embedded one. */
export const TEST_DATABASE_KIND: 'postgres' | 'pglite' = process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite';
