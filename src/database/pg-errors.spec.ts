import { isUniqueViolation, sqlState } from './pg-errors.js';

describe('PostgreSQL errors', () => {
  const raw = Object.assign(new Error('duplicate key'), { code: '23505', constraint: 'orders_shop_order_no_key' });
  const wrapped = Object.assign(new Error('query failed'), { driverError: raw });

  it('reads the SQLSTATE of a raw or a TypeORM-wrapped error', () => {
    expect([sqlState(raw), sqlState(wrapped), sqlState(new Error('x')), sqlState(null), sqlState(undefined)]).toEqual([
      '23505',
      '23505',
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('tells a unique violation, of one constraint when named', () => {
    expect(isUniqueViolation(raw)).toBe(true);
    expect(isUniqueViolation(wrapped, 'orders_shop_order_no_key')).toBe(true);
    expect(isUniqueViolation(wrapped, 'order_attempts_one_open')).toBe(false);
    expect(isUniqueViolation(Object.assign(new Error('x'), { code: '40001' }))).toBe(false);
    expect(isUniqueViolation(null)).toBe(false);
  });
});
