/** Request bodies and queries of the orders' internal API (CONTRACT §5), validated by class-validator. */
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  Equals,
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateIf,
} from 'class-validator';
import { PageQuery } from '../common/pagination.js';
import { MAX_ID, NotWith } from '../common/validation.js';
import { SUPPLIER_NAME_PATTERN } from '../suppliers/supplier.types.js';
import { ORDER_STATUSES } from './order-state.js';

export const SHOP_ORDER_NO_RE = /^[A-Za-z0-9._:-]{1,64}$/;
const DECIMAL_RE = /^\d{1,15}(\.\d{1,8})?$/;

/** An optional field sent as `null` (as many serializers write an absent one) counts as absent. */
const nullAsAbsent = ({ value }: { value: unknown }) => (value === null ? undefined : value);

export class CreateOrderDto {
  @ApiProperty({
    type: String,
    pattern: SHOP_ORDER_NO_RE.source,
    description:
      "the shop's order number, the idempotency key; attempt 1 is sent upstream as `downstream_order_no` = this, " +
      'attempt n > 1 as `<shop_order_no>-<n>`',
    example: 'SO-20261122-0001',
  })
  @IsString()
  @Matches(SHOP_ORDER_NO_RE, { message: 'shop_order_no must match [A-Za-z0-9._:-]{1,64}' })
  shop_order_no!: string;

  @ApiProperty({
    type: String,
    minLength: 1,
    maxLength: 255,
    description:
      'the SKU to buy: its `sku_key` (`<product id>:<sku_code>`) or a plain `sku_code`, which names the one listed SKU carrying it; ' +
      'a code several listed SKUs carry is 409 `sku_ambiguous` (with the `candidates`), ' +
      'one only unlisted SKUs carry 409 `sku_unavailable`. ' +
      "Recorded as sent (the idempotency key compares it as sent); the order answers with the SKU's `sku_key` and `sku_code`",
    example: 'SKU-00042-1',
    required: false,
  })
  @ValidateIf((o: CreateOrderDto) => o.sku_code !== undefined || o.offer === undefined)
  @IsString()
  @Length(1, 255)
  sku_code!: string;

  @ApiPropertyOptional({
    type: String,
    pattern: SHOP_ORDER_NO_RE.source,
    description:
      'instead of `sku_code` (and `supplier`): the offer (CONTRACT §11) to buy through; its sources are tried in its routing order, ' +
      'the next only after a definitive refusal before any charge (404 `offer_not_found`; every source refused: 409 `no_source_available`)',
    example: 'GAME-KEY-50',
  })
  @ValidateIf((o: CreateOrderDto) => o.offer !== undefined)
  @NotWith('sku_code', 'give either offer or sku_code, not both')
  @NotWith('supplier', 'an offer names its suppliers: give no supplier with it')
  @IsString()
  @Matches(SHOP_ORDER_NO_RE, { message: 'offer must match [A-Za-z0-9._:-]{1,64}' })
  offer?: string;

  @ApiPropertyOptional({
    type: String,
    pattern: SUPPLIER_NAME_PATTERN.source,
    description:
      'the supplier to buy from (CONTRACT §10): the SKU is looked up within it ' +
      '(404 `supplier_not_found`, 409 `supplier_disabled`). ' +
      'Without it, a `sku_code` or `sku_key` that SKUs of several suppliers carry is 409 `sku_ambiguous` ' +
      'with the candidates as `{supplier, sku_key}`',
    example: 'main',
  })
  @Transform(nullAsAbsent)
  @IsOptional()
  @IsString()
  @Matches(SUPPLIER_NAME_PATTERN, { message: 'supplier must match [a-z][a-z0-9-]{0,31}' })
  supplier?: string;

  @ApiProperty({ type: 'integer', minimum: 1, description: '1 to ORDER_MAX_QUANTITY (default 1000)', example: 2 })
  @IsInt()
  @Min(1)
  quantity!: number;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'required for a `manual` SKU: the answers to its `manual_form_schema`',
    example: { account: 'player-88412', server: 'asia-1' },
  })
  @Transform(nullAsAbsent)
  @IsOptional()
  @IsObject()
  manual_form_data?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: String,
    pattern: DECIMAL_RE.source,
    description: "the highest unit price to pay, a decimal string; default: the SKU's sale price before the fresh read",
    example: '25.90',
  })
  @Transform(nullAsAbsent)
  @IsOptional()
  @IsString()
  @Matches(DECIMAL_RE, { message: 'max_unit_cost must be a decimal string such as 12.50' })
  max_unit_cost?: string;

  @ApiPropertyOptional({
    type: String,
    maxLength: 128,
    description: 'sent upstream as `trace_id`; one is generated when absent',
    example: 'shop-7f3a9c2e',
  })
  @Transform(nullAsAbsent)
  @IsOptional()
  @IsString()
  @MaxLength(128)
  trace_id?: string;

  /** The usual body, taken without class-validator (FastAcceptingDto): see acceptCreateOrder. */
  static fastAccept(body: unknown): CreateOrderDto | null {
    return acceptCreateOrder(body);
  }
}

const CREATE_ORDER_KEYS: ReadonlySet<string> = new Set(['shop_order_no', 'sku_code', 'supplier', 'quantity', 'max_unit_cost', 'trace_id']);
/**
 * A sku_code whose length every count agrees on (class-validator counts some pairs of code units as
 * one): printable ASCII, 1 to 255 characters.
 */
const PLAIN_SKU_CODE_RE = /^[\x20-\x7e]{1,255}$/;

/**
 * The usual body of `POST /internal/orders`, taken without class-validator (FastAcceptingDto): a
 * plain object of the known keys but `manual_form_data`, each of the right type and form (an optional
 * key absent, never null). Anything else, valid or not, goes through the full validation.
 */
export function acceptCreateOrder(body: unknown): CreateOrderDto | null {
  if (typeof body !== 'object' || body === null || Object.getPrototypeOf(body) !== Object.prototype) return null;
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) if (!CREATE_ORDER_KEYS.has(key)) return null;
  if (typeof b.shop_order_no !== 'string' || !SHOP_ORDER_NO_RE.test(b.shop_order_no)) return null;
  if (typeof b.sku_code !== 'string' || !PLAIN_SKU_CODE_RE.test(b.sku_code)) return null;
  if ('supplier' in b && (typeof b.supplier !== 'string' || !SUPPLIER_NAME_PATTERN.test(b.supplier))) return null;
  if (typeof b.quantity !== 'number' || !Number.isInteger(b.quantity) || b.quantity < 1) return null;
  if ('max_unit_cost' in b && (typeof b.max_unit_cost !== 'string' || !DECIMAL_RE.test(b.max_unit_cost))) return null;
  if ('trace_id' in b && (typeof b.trace_id !== 'string' || b.trace_id.length > 128)) return null;
  return Object.assign(new CreateOrderDto(), b);
}

export class ListOrdersQuery extends PageQuery {
  @ApiPropertyOptional({ enum: ORDER_STATUSES, description: 'only orders in this status' })
  @IsOptional()
  @IsIn(ORDER_STATUSES)
  status?: string;

  @ApiPropertyOptional({
    type: String,
    pattern: SUPPLIER_NAME_PATTERN.source,
    description: 'only orders at this supplier',
    example: 'main',
  })
  @IsOptional()
  @IsString()
  @Matches(SUPPLIER_NAME_PATTERN, { message: 'supplier must match [a-z][a-z0-9-]{0,31}' })
  supplier?: string;

  @ApiPropertyOptional({
    type: Boolean,
    description: '`true`: only stuck orders (unfinished without progress for STUCK_ORDER_ALERT_S, or `submit_unknown` for 10 minutes)',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean()
  stuck?: boolean;
}

/**
 * Either `{upstream_order_id}` or `{not_placed: true, reason}`, never both: a body that names an
 * upstream order and also says the attempt was never placed is refused (settled as never placed, the
 * order could be submitted again and paid twice). `not_placed`, when present, must be `true`; without
 * it, `upstream_order_id` is required; a given `upstream_order_id` is always checked.
 */
export class ResolveOrderDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description: 'the upstream order of this attempt (without `not_placed`)',
    example: 100232,
  })
  @ValidateIf((o: ResolveOrderDto) => o.upstream_order_id !== undefined || o.not_placed === undefined)
  @NotWith('not_placed', 'give either upstream_order_id or not_placed, not both')
  @IsInt()
  @Min(1)
  @Max(MAX_ID)
  upstream_order_id?: number;

  @ApiPropertyOptional({
    type: Boolean,
    enum: [true],
    description: '`true`: the upstream never got this attempt (without `upstream_order_id`)',
  })
  @ValidateIf((o: ResolveOrderDto) => o.not_placed !== undefined || o.upstream_order_id === undefined)
  @Equals(true, { message: 'not_placed must be true (or give upstream_order_id)' })
  not_placed?: boolean;

  @ApiPropertyOptional({
    type: String,
    minLength: 1,
    maxLength: 500,
    description: 'required with `not_placed`: why',
    example: 'no such order in the upstream console (checked by ops)',
  })
  @ValidateIf((o: ResolveOrderDto) => o.not_placed === true)
  @IsString()
  @Length(1, 500)
  reason?: string;
}
