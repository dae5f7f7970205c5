// Drops this run's databases and cache (see global-setup.mjs).
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export default async function globalTeardown() {
  const run = process.env.RELAY_TEST_RUN;
  if (!run) return;
  rmSync(fileURLToPath(new URL(`../.cache/${run}`, import.meta.url)), { recursive: true, force: true });
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) return;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query('SELECT datname FROM pg_database WHERE datname LIKE $1 OR datname LIKE $2', [
      `relay_t\\_${run}\\_%`,
      `relay_tpl\\_${run}\\_%`,
    ]);
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
