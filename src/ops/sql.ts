import type { EntityManager } from 'typeorm';

type Runner = Pick<EntityManager, 'query'>;

/** The rows of a raw query; TypeORM answers UPDATE/DELETE … RETURNING as `[rows, count]`. */
export async function sqlRows<T>(runner: Runner, text: string, params: unknown[] = []): Promise<T[]> {
  const r: unknown = await runner.query(text, params);
  if (Array.isArray(r) && r.length === 2 && Array.isArray(r[0]) && typeof r[1] === 'number') return r[0] as T[];
  return (Array.isArray(r) ? r : []) as T[];
}
