/** Request DTOs of the catalog's internal API (the global ValidationPipe answers 400 bad_request with `fields`). */
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  NotContains,
  registerDecorator,
  ValidateIf,
  ValidateNested,
  type ValidationArguments,
} from 'class-validator';
import { PageQuery } from '../common/pagination.js';
import { MAX_ID, NotWith, OnlyWith } from '../common/validation.js';

/** A supplier's name in a query or body (CONTRACT §10). */
const SUPPLIER_RE = /^[a-z][a-z0-9-]{0,31}$/;
const SUPPLIER_MESSAGE = 'supplier must be a supplier name ([a-z][a-z0-9-]{0,31})';

const toBoolean = ({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value);
/** Markups are decimal strings; a JSON number is taken as its decimal text. */
const toDecimalText = ({ value }: { value: unknown }) => (typeof value === 'number' && Number.isFinite(value) ? String(value) : value);
const DECIMAL_RE = /^-?\d+(\.\d+)?$/;

/** An RFC 3339 date-time as an instant. */
export interface Rfc3339Instant {
  /** The instant to the millisecond (digits beyond it dropped, as `new Date` does). */
  date: Date;
  /** The text has a non-zero digit beyond the millisecond (so no stored `updated_at` equals it). */
  subMillisecond: boolean;
}

const RFC3339_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

const isLeapYear = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const daysIn = (year: number, month: number) => [31, isLeapYear(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];

/**
 * Parses an RFC 3339 date-time (the grammar class-validator's IsRFC3339 checks: `T`, `t` or a space
 * between date and time, `Z`, `z` or `±hh:mm`), refusing what names no instant: a day the month does
 * not have (`2026-02-30`, which `new Date` reads as 2 March), hours, minutes or offsets out of range,
 * and the leap second `:60` (no clock of ours, nor JavaScript's Date, holds one). Null when refused.
 */
export function parseRfc3339(text: unknown): Rfc3339Instant | null {
  if (typeof text !== 'string') return null;
  const m = RFC3339_RE.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const fraction = m[7] ?? '';
  const offset = m[8] === undefined ? 0 : (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10]));
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59 || Number(m[9] ?? 0) > 23 || Number(m[10] ?? 0) > 59) return null;
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day); // not Date.UTC: it reads years 0–99 as 1900–1999
  d.setUTCHours(hour, minute, second, Number(fraction.slice(0, 3).padEnd(3, '0')));
  return { date: new Date(d.getTime() - offset * 60_000), subMillisecond: /[1-9]/.test(fraction.slice(3)) };
}

/** An RFC 3339 date-time that names an instant (see parseRfc3339). */
function IsRfc3339Instant(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isRfc3339Instant',
      target: target.constructor,
      propertyName: propertyName as string,
      validator: {
        validate: (value: unknown) => parseRfc3339(value) !== null,
        defaultMessage: (args?: ValidationArguments) =>
          typeof args?.value === 'string' && RFC3339_RE.test(args.value)
            ? `${args.property} names no instant: a day the month does not have, a time or offset out of range, or a leap second (:60)`
            : `${args?.property ?? 'value'} must be an RFC 3339 date-time, e.g. 2026-01-01T00:00:00Z`,
      },
    });
}

export class SkuListQuery extends PageQuery {
  @ApiPropertyOptional({ type: String, description: "only this supplier's SKUs (absent: every supplier's)", example: 'main' })
  @IsOptional()
  @IsString()
  @Matches(SUPPLIER_RE, { message: SUPPLIER_MESSAGE })
  supplier?: string;

  /** A category (a top-level one includes its children). */
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_ID,
    description: 'an upstream category id (a top-level one includes its children)',
  })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_ID)
  category_id?: number;

  @ApiPropertyOptional({ type: Boolean, description: '`true`: listed SKUs only, `false`: unlisted only; absent: both' })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean({ message: 'listed must be true or false' })
  listed?: boolean;

  @ApiPropertyOptional({ type: Boolean, description: 'available = listed, active and not `out_of_stock`' })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean({ message: 'available must be true or false' })
  available?: boolean;

  /** RFC 3339: the SKUs whose updated_at is later (unlisted ones included). */
  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    description:
      'RFC 3339: the SKUs whose `updated_at` is later, delisted ones included, ordered by `updated_at`, then `sku_code`, ' +
      'then `product_id` ' +
      '(with `after_sku_key` or `after_sku_code`: those after that SKU in that order). A day the month does not have and ' +
      'a leap second (`:60`) are refused.',
    example: '2026-11-22T09:00:00Z',
  })
  @IsOptional()
  @IsRfc3339Instant()
  changed_since?: string;

  /**
   * Keyset following: with `changed_since`, the rows after (changed_since, after_sku_code) in the
   * list's order (updated_at, sku_code), so that a follower continues from the last row it read.
   */
  @ApiPropertyOptional({
    type: String,
    minLength: 1,
    description:
      'only with `changed_since`: the SKUs after (`changed_since`, `after_sku_code`) in the order (`updated_at`, ' +
      '`sku_code`) (`total` counts them). ' +
      "To follow the catalog, ask page 1 with `page_size=500`, then again with the last item's `updated_at` and `sku_code` as " +
      '`changed_since` and `after_sku_code`, until a page comes back shorter than `page_size`: no change is missed, none is listed twice.',
    example: 'SKU-00042-1',
  })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  // No length of its own: any stored code must be accepted (the request line's limit bounds it).
  @NotContains('\u0000', { message: 'after_sku_code must not hold a NUL character' })
  @OnlyWith('changed_since', 'after_sku_code goes with changed_since (the updated_at of the row it names)')
  after_sku_code?: string;

  /**
   * Keyset following by key: with `changed_since`, the rows after (changed_since, the key's sku_code,
   * the key's product id) in the list's order (updated_at, sku_code, product_id); it tells apart SKUs
   * of one code (several products carrying it).
   */
  @ApiPropertyOptional({
    type: String,
    pattern: '^[0-9]+:.+$',
    description:
      'only with `changed_since`, instead of `after_sku_code`: the SKUs after the one with this `sku_key` in the order ' +
      '(`updated_at`, `sku_code`, `product_id`). ' +
      "Follow with the last item's `updated_at` and `sku_key`: SKUs of one code changed in the same millisecond are told apart.",
    example: '42:SKU-00042-1',
  })
  @IsOptional()
  @IsString()
  @Matches(/^\d{1,19}:.+$/s, { message: 'after_sku_key must be a sku_key: <product id>:<sku_code>' })
  @NotContains('\u0000', { message: 'after_sku_key must not hold a NUL character' })
  @OnlyWith('changed_since', 'after_sku_key goes with changed_since (the updated_at of the row it names)')
  @NotWith('after_sku_code', 'after_sku_key and after_sku_code are exclusive')
  after_sku_key?: string;

  /**
   * With after_sku_key: the supplier of that SKU, the list's last order column (several suppliers may
   * carry one sku_key changed in one millisecond).
   */
  @ApiPropertyOptional({
    type: String,
    description:
      "only with `after_sku_key`: the `supplier` of the last item read (the order's last column, after `product_id`); " +
      "several suppliers' SKUs of one key changed in the same millisecond are told apart",
    example: 'main',
  })
  @IsOptional()
  @IsString()
  @Matches(SUPPLIER_RE, { message: SUPPLIER_MESSAGE })
  @OnlyWith('after_sku_key', 'after_supplier goes with after_sku_key (the supplier of the row it names)')
  after_supplier?: string;
}

export class ListQuery extends PageQuery {}

/** A page of one supplier's rows, or every supplier's (a SKU's changes, the sync runs). */
export class SupplierPageQuery extends PageQuery {
  @ApiPropertyOptional({ type: String, description: "only this supplier's (absent: every supplier's)", example: 'main' })
  @IsOptional()
  @IsString()
  @Matches(SUPPLIER_RE, { message: SUPPLIER_MESSAGE })
  supplier?: string;
}

export class StartSyncBody {
  @ApiPropertyOptional({ enum: ['full', 'incremental'], description: 'absent: SYNC_MODE and the schedule of full passes decide' })
  @IsOptional()
  @IsIn(['full', 'incremental'])
  mode?: 'full' | 'incremental';

  @ApiPropertyOptional({
    type: String,
    description: 'the supplier whose catalog is synced (default: the `UPSTREAM_*` supplier)',
    example: 'main',
  })
  @IsOptional()
  @IsString()
  @Matches(SUPPLIER_RE, { message: SUPPLIER_MESSAGE })
  supplier?: string;
}

/** `?supplier=` of the catalog's lists and look-ups. */
export class SupplierQuery {
  @ApiPropertyOptional({ type: String, description: 'only this supplier’s catalog (absent: every supplier’s)', example: 'main' })
  @IsOptional()
  @IsString()
  @Matches(SUPPLIER_RE, { message: SUPPLIER_MESSAGE })
  supplier?: string;
}

export class PricingRuleBody {
  @ApiProperty({
    enum: ['supplier', 'category', 'sku'],
    description:
      'a rule for every SKU of a supplier, for a category (and its children) of a supplier, or for one SKU (precedence: ' +
      'SKU > category > supplier > the defaults)',
  })
  @IsIn(['supplier', 'category', 'sku'])
  scope!: 'supplier' | 'category' | 'sku';

  @ApiPropertyOptional({
    type: String,
    description:
      'the supplier: required with `scope: supplier`; with `scope: category` the category is that supplier’s (default: ' +
      'the `UPSTREAM_*` supplier); ' +
      'with `scope: sku` the SKU is looked for at that supplier only (default: every supplier; a code or key several ' +
      'suppliers carry is 409 `sku_ambiguous`)',
    example: 'main',
  })
  @ValidateIf((o: PricingRuleBody) => o.scope === 'supplier' || o.supplier !== undefined)
  @IsString()
  @Matches(SUPPLIER_RE, { message: SUPPLIER_MESSAGE })
  supplier?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_ID,
    description: 'with `scope: category`: the upstream category id',
    example: 1,
  })
  @ValidateIf((o: PricingRuleBody) => o.scope === 'category')
  @IsInt()
  @Min(1)
  @Max(MAX_ID)
  category_id?: number;

  @ApiPropertyOptional({
    type: String,
    maxLength: 255,
    description:
      "with `scope: sku`: the SKU's `sku_key`, or a plain `sku_code` (409 `sku_ambiguous` when several listed SKUs carry " +
      'it; a code no SKU carries yet makes a rule for the SKUs that come to carry it)',
    example: '42:SKU-00042-1',
  })
  @ValidateIf((o: PricingRuleBody) => o.scope === 'sku')
  @IsString()
  @IsNotEmpty()
  @MaxLength(255)
  sku_code?: string;

  @ApiProperty({
    type: String,
    pattern: DECIMAL_RE.source,
    description: 'percent added to the cost, a decimal string (a JSON number is taken as its text)',
    example: '12.5',
  })
  @Transform(toDecimalText)
  @IsString()
  @Matches(DECIMAL_RE, { message: 'markup_percent must be a decimal such as 12.5' })
  markup_percent!: string;

  @ApiProperty({
    type: String,
    pattern: DECIMAL_RE.source,
    description: 'amount added after the percent, a decimal string',
    example: '0.50',
  })
  @Transform(toDecimalText)
  @IsString()
  @Matches(DECIMAL_RE, { message: 'markup_fixed must be a decimal such as 0.50' })
  markup_fixed!: string;

  /** A step > 0 such as 0.01, 0.1 or 1; null or absent: PRICE_ROUNDING. */
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    pattern: DECIMAL_RE.source,
    description: 'rounding step > 0 such as 0.01, 0.1 or 1; null or absent: PRICE_ROUNDING',
    example: '0.1',
  })
  @IsOptional()
  @Transform(toDecimalText)
  @IsString()
  @Matches(DECIMAL_RE, { message: 'rounding must be a decimal such as 0.01' })
  rounding?: string | null;
}

export class PutPricingRulesBody {
  @ApiProperty({
    type: () => PricingRuleBody,
    isArray: true,
    maxItems: 10_000,
    description: 'every rule: the rules not listed are removed',
  })
  @IsArray()
  @ArrayMaxSize(10_000)
  @ValidateNested({ each: true })
  @Type(() => PricingRuleBody)
  rules!: PricingRuleBody[];
}

/** `GET /internal/catalog/products` (CONTRACT §5). */
export class ProductListQuery extends PageQuery {
  @ApiPropertyOptional({ type: String, description: "the supplier's name (UPSTREAM_NAME, default `main`); another name lists nothing" })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  supplier?: string;

  @ApiPropertyOptional({ type: Boolean, description: '`true`: products with a listed SKU only, `false`: the others only; absent: both' })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean({ message: 'listed must be true or false' })
  listed?: boolean;

  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    description: 'RFC 3339: the products whose `updated_at` is later (unlisted ones included), ordered by `updated_at`, then `product_id`',
    example: '2026-11-22T09:00:00Z',
  })
  @IsOptional()
  @IsRfc3339Instant()
  changed_since?: string;
}

/** `GET /internal/catalog/products/{product_id}?supplier=`. */
export class ProductQuery {
  @ApiPropertyOptional({
    type: String,
    description: "the supplier's name (UPSTREAM_NAME, default `main`); another name: 404 `product_not_found`",
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  supplier?: string;
}
