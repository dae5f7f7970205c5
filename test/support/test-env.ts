import { fileURLToPath } from 'node:url';

/** This `npm test` run, named by global-setup.mjs; several runs may share a checkout and a server. */
export const TEST_RUN = process.env.RELAY_TEST_RUN ?? `${Math.floor(Date.now() / 1000)}_${process.pid}`;
export const CACHE_DIR = fileURLToPath(new URL(`../.cache/${TEST_RUN}/`, import.meta.url));
export const PGLITE_SNAPSHOT = `${CACHE_DIR}pglite-migrated.tar`;
export const TEMPLATE_DB = `relay_tpl_${TEST_RUN}_0`;
export const TEST_DB_PREFIX = `relay_t_${TEST_RUN}_`;

export function withDatabaseName(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}
