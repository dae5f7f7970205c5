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
  IsRFC3339,
  IsString,
  Matches,
  MaxLength,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { PageQuery } from '../common/pagination.js';

const toBoolean = ({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value);
/** Markups are decimal strings; a JSON number is taken as its decimal text. */
const toDecimalText = ({ value }: { value: unknown }) => (typeof value === 'number' && Number.isFinite(value) ? String(value) : value);
const DECIMAL_RE = /^-?\d+(\.\d+)?$/;

export class SkuListQuery extends PageQuery {
  /** A category (a top-level one includes its children). */
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: 'an upstream category id (a top-level one includes its children)' })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
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
    description: 'RFC 3339: the SKUs whose `updated_at` is later, delisted ones included, ordered by `updated_at`',
    example: '2026-11-22T09:00:00Z',
  })
  @IsOptional()
  @IsRFC3339({ message: 'changed_since must be an RFC 3339 date-time, e.g. 2026-01-01T00:00:00Z' })
  changed_since?: string;
}

export class ListQuery extends PageQuery {}

export class StartSyncBody {
  @ApiPropertyOptional({ enum: ['full', 'incremental'], description: 'absent: SYNC_MODE and the schedule of full passes decide' })
  @IsOptional()
  @IsIn(['full', 'incremental'])
  mode?: 'full' | 'incremental';
}

export class PricingRuleBody {
  @ApiProperty({ enum: ['category', 'sku'], description: 'a rule for a category (and its children) or for one sku_code' })
  @IsIn(['category', 'sku'])
  scope!: 'category' | 'sku';

  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: 'with `scope: category`: the upstream category id', example: 1 })
  @ValidateIf((o: PricingRuleBody) => o.scope === 'category')
  @IsInt()
  @Min(1)
  category_id?: number;

  @ApiPropertyOptional({ type: String, maxLength: 200, description: 'with `scope: sku`: the sku_code', example: 'SKU-00042-1' })
  @ValidateIf((o: PricingRuleBody) => o.scope === 'sku')
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  sku_code?: string;

  @ApiProperty({ type: String, pattern: DECIMAL_RE.source, description: 'percent added to the cost, a decimal string (a JSON number is taken as its text)', example: '12.5' })
  @Transform(toDecimalText)
  @IsString()
  @Matches(DECIMAL_RE, { message: 'markup_percent must be a decimal such as 12.5' })
  markup_percent!: string;

  @ApiProperty({ type: String, pattern: DECIMAL_RE.source, description: 'amount added after the percent, a decimal string', example: '0.50' })
  @Transform(toDecimalText)
  @IsString()
  @Matches(DECIMAL_RE, { message: 'markup_fixed must be a decimal such as 0.50' })
  markup_fixed!: string;

  /** A step > 0 such as 0.01, 0.1 or 1; null or absent: PRICE_ROUNDING. */
  @ApiPropertyOptional({ type: String, nullable: true, pattern: DECIMAL_RE.source, description: 'rounding step > 0 such as 0.01, 0.1 or 1; null or absent: PRICE_ROUNDING', example: '0.1' })
  @IsOptional()
  @Transform(toDecimalText)
  @IsString()
  @Matches(DECIMAL_RE, { message: 'rounding must be a decimal such as 0.01' })
  rounding?: string | null;
}

export class PutPricingRulesBody {
  @ApiProperty({ type: () => PricingRuleBody, isArray: true, maxItems: 10_000, description: 'every rule: the rules not listed are removed' })
  @IsArray()
  @ArrayMaxSize(10_000)
  @ValidateNested({ each: true })
  @Type(() => PricingRuleBody)
  rules!: PricingRuleBody[];
}
