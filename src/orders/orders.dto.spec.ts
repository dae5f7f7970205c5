import type { ArgumentMetadata } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { createValidationPipe } from '../common/validation.js';
import { CreateOrderDto, ResolveOrderDto, acceptCreateOrder } from './orders.dto.js';

const METADATA: ArgumentMetadata = { type: 'body', metatype: CreateOrderDto, data: undefined };

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

async function outcome(run: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    return { ok: false, error };
  }
}

const describeError = (e: unknown): unknown =>
  e instanceof AppError ? { code: e.code, httpStatus: e.httpStatus, message: e.message, extra: e.extra } : String(e);

/** Bodies of every kind, each made fresh by its factory (the full validation edits what it is given). */
function bodies(): Array<[string, () => unknown]> {
  const base = { shop_order_no: 'SO-1', sku_code: 'SKU-1', quantity: 2 };
  const out: Array<[string, () => unknown]> = [
    ['the usual body', () => ({ ...base })],
    ['with max_unit_cost and trace_id', () => ({ ...base, max_unit_cost: '12.50', trace_id: 'shop-7f3a9c2e' })],
    ['with manual_form_data', () => ({ ...base, manual_form_data: { account: 'p-1' } })],
    ['an unknown key', () => ({ ...base, extra: 1 })],
    ['a constructor key', () => ({ ...base, constructor: 'x' })],
    [
      'a __proto__ key (own, as JSON.parse makes it)',
      () => JSON.parse('{"shop_order_no":"SO-1","sku_code":"S","quantity":1,"__proto__":{"quantity":5}}'),
    ],
    ['no prototype', () => Object.assign(Object.create(null) as object, base)],
    ['an instance of a class', () => Object.assign(new (class Body {})(), base)],
    ['an array', () => [base]],
    ['null', () => null],
    ['undefined', () => undefined],
    ['a string', () => JSON.stringify(base)],
    ['a number', () => 7],
    ['an empty object', () => ({})],
    ['a Buffer', () => Buffer.from(JSON.stringify(base))],
  ];
  const variants: Record<string, unknown[]> = {
    shop_order_no: [undefined, null, '', 'A', 'a'.repeat(64), 'a'.repeat(65), 'SO 1', 'SO-é', 'SO\n', 12, ['SO-1'], {}, 'SO.1:2_3-4'],
    sku_code: [
      undefined,
      null,
      '',
      'S',
      's'.repeat(255),
      's'.repeat(256),
      'é',
      '\uFE0F',
      'a\uFE0F',
      '😀',
      '😀'.repeat(128),
      'x'.repeat(254) + '😀',
      ' ',
      'a\u0000b',
      5,
      true,
    ],
    quantity: [undefined, null, 0, -1, -0, 1, 1.5, 1000, 1001, 1e300, Number.NaN, Infinity, '2', true, [2], 2 ** 53],
    max_unit_cost: [
      undefined,
      null,
      '',
      '1',
      '1.',
      '12.50',
      '0.00000001',
      '0.000000001',
      '1234567890123456',
      '123456789012345',
      '-1',
      12.5,
      'x',
      ' 1',
    ],
    trace_id: [undefined, null, '', 't', 't'.repeat(128), 't'.repeat(129), '😀'.repeat(64), '😀'.repeat(65), 'é'.repeat(128), 5, {}],
  };
  for (const [key, values] of Object.entries(variants)) {
    for (const v of values) {
      out.push([
        `${key} = ${JSON.stringify(v) ?? String(v)}`,
        () => {
          const b: Record<string, unknown> = { ...base };
          if (v === undefined) delete b[key];
          else b[key] = v;
          return b;
        },
      ]);
    }
  }
  return out;
}

describe('POST /internal/orders: the body taken without class-validator', () => {
  const full = createValidationPipe({ fastAccepts: false });
  const served = createValidationPipe();

  it(
    'accepts only bodies the full validation accepts, as the same DTO, ' + 'and the service answers every body as the full validation does',
    async () => {
      let fast = 0;
      for (const [label, make] of bodies()) {
        const reference = await outcome(() => full.transform(make(), METADATA) as Promise<unknown>);
        const accepted = acceptCreateOrder(make());
        if (accepted !== null) {
          fast++;
          expect({ label, ok: reference.ok }).toEqual({ label, ok: true });
          const value = (reference as { value: unknown }).value;
          expect(accepted).toBeInstanceOf(CreateOrderDto);
          expect(value).toBeInstanceOf(CreateOrderDto);
          expect({ label, keys: Object.keys(accepted).sort() }).toEqual({ label, keys: Object.keys(value as object).sort() });
          expect({ label, dto: { ...accepted } }).toEqual({ label, dto: { ...(value as object) } });
        }
        const answered = await outcome(() => served.transform(make(), METADATA) as Promise<unknown>);
        expect({ label, ok: answered.ok }).toEqual({ label, ok: reference.ok });
        if (reference.ok && answered.ok) {
          expect(answered.value).toBeInstanceOf(CreateOrderDto);
          expect({ label, dto: { ...(answered.value as object) } }).toEqual({ label, dto: { ...(reference.value as object) } });
        } else if (!reference.ok && !answered.ok) {
          expect({ label, error: describeError(answered.error) }).toEqual({ label, error: describeError(reference.error) });
        }
      }
      // the plain valid bodies do take the fast path
      expect(acceptCreateOrder({ shop_order_no: 'SO-1', sku_code: 'SKU-1', quantity: 2 })).toBeInstanceOf(CreateOrderDto);
      expect(fast).toBeGreaterThan(20);
    },
  );
});

describe('ResolveOrderDto: either {upstream_order_id} or {not_placed: true, reason}', () => {
  const pipe = createValidationPipe();
  const meta: ArgumentMetadata = { type: 'body', metatype: ResolveOrderDto, data: undefined };
  /** The fields refused for `body` (null: accepted). */
  const refused = async (body: unknown): Promise<string[] | null> => {
    const r = await outcome(() => pipe.transform(body, meta) as Promise<unknown>);
    if (r.ok) return null;
    expect(r.error).toBeInstanceOf(AppError);
    expect((r.error as AppError).code).toBe('bad_request');
    return Object.keys(((r.error as AppError).extra as { fields: Record<string, string[]> }).fields).sort();
  };

  it.each<[string, unknown, string[] | null]>([
    ['an upstream order', { upstream_order_id: 100232 }, null],
    ['never placed, with a reason', { not_placed: true, reason: 'checked by ops' }, null],
    ['both (contradictory)', { upstream_order_id: 100232, not_placed: true, reason: 'x' }, ['upstream_order_id']],
    ['neither', {}, ['not_placed', 'upstream_order_id']],
    ['not_placed false alone', { not_placed: false }, ['not_placed']],
    ['not_placed false beside a bad id', { not_placed: false, upstream_order_id: 'abc' }, ['not_placed', 'upstream_order_id']],
    ['not_placed null beside a negative id', { not_placed: null, upstream_order_id: -5 }, ['not_placed', 'upstream_order_id']],
    ['not_placed false beside a good id', { not_placed: false, upstream_order_id: 7 }, ['not_placed', 'upstream_order_id']],
    ['a null id', { upstream_order_id: null }, ['upstream_order_id']],
    ['a null id beside not_placed', { upstream_order_id: null, not_placed: true, reason: 'x' }, ['upstream_order_id']],
    ['not_placed without a reason', { not_placed: true }, ['reason']],
  ])('%s', async (_label, body, fields) => {
    expect(await refused(body)).toEqual(fields);
  });
});
