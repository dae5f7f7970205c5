/** PostgreSQL error classification shared by the repositories (errors arrive raw or wrapped by TypeORM). */

const UNIQUE_VIOLATION = '23505';

/** A unique-constraint violation; with `constraint`, only a violation of that one. */
export function isUniqueViolation(e: unknown, constraint?: string): boolean {
  const wrapped = e as { driverError?: { code?: string; constraint?: string } } | null;
  const d = wrapped?.driverError ?? (e as { code?: string; constraint?: string } | null);
  return sqlState(e) === UNIQUE_VIOLATION && (constraint === undefined || d?.constraint === constraint);
}

/** The SQLSTATE of an error (raw or wrapped by TypeORM). */
export function sqlState(e: unknown): string | undefined {
  const wrapped = e as { driverError?: { code?: string } } | null;
  return (wrapped?.driverError ?? (e as { code?: string } | null))?.code;
}
