/** DatabaseEndpoint.describe: what the start log line says of the database, never its credentials. */
import { DatabaseEndpoint } from './database-endpoint.js';

describe('DatabaseEndpoint.describe', () => {
  it.each([
    ['postgres://relay:s3cretpw@db.internal:6432/relay?sslpassword=s3cretpw', 'PostgreSQL at db.internal:6432/relay'],
    ['postgresql://relay:s3cretpw@db.internal/relay', 'PostgreSQL at db.internal:5432/relay'],
    // Accepted by the configuration (a postgres: URL) but without a host to a URL parser.
    ['postgres:relay:s3cretpw@db.internal/relay', 'PostgreSQL at postgres:***@db.internal/relay'],
    [
      'postgres:///relay?host=/var/run/postgresql&password=s3cretpw',
      'PostgreSQL at postgres:///relay?host=/var/run/postgresql&password=***',
    ],
  ])('%s → %s', (url, described) => {
    const endpoint = new DatabaseEndpoint(url, 'postgres', null);
    expect(endpoint.describe()).toBe(described);
    expect(endpoint.describe()).not.toContain('s3cret');
  });

  it('names the embedded database', () => {
    expect(new DatabaseEndpoint('postgres://postgres@127.0.0.1:1/x', 'pglite', null).describe()).toBe('embedded PostgreSQL (PGlite)');
  });
});
