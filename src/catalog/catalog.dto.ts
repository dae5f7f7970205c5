/** Request DTOs of the catalog's internal API (the global ValidationPipe answers 400 bad_request with `fields`). */
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
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  category_id?: number;

  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean({ message: 'listed must be true or false' })
  listed?: boolean;

  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean({ message: 'available must be true or false' })
  available?: boolean;

  /** RFC 3339: the SKUs whose updated_at is later (unlisted ones included). */
  @IsOptional()
  @IsRFC3339({ message: 'changed_since must be an RFC 3339 date-time, e.g. 2026-01-01T00:00:00Z' })
  changed_since?: string;
}

export class ListQuery extends PageQuery {}

export class StartSyncBody {
  @IsOptional()
  @IsIn(['full', 'incremental'])
  mode?: 'full' | 'incremental';
}

export class PricingRuleBody {
  @IsIn(['category', 'sku'])
  scope!: 'category' | 'sku';

  @ValidateIf((o: PricingRuleBody) => o.scope === 'category')
  @IsInt()
  @Min(1)
  category_id?: number;

  @ValidateIf((o: PricingRuleBody) => o.scope === 'sku')
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  sku_code?: string;

  @Transform(toDecimalText)
  @IsString()
  @Matches(DECIMAL_RE, { message: 'markup_percent must be a decimal such as 12.5' })
  markup_percent!: string;

  @Transform(toDecimalText)
  @IsString()
  @Matches(DECIMAL_RE, { message: 'markup_fixed must be a decimal such as 0.50' })
  markup_fixed!: string;

  /** A step > 0 such as 0.01, 0.1 or 1; null or absent: PRICE_ROUNDING. */
  @IsOptional()
  @Transform(toDecimalText)
  @IsString()
  @Matches(DECIMAL_RE, { message: 'rounding must be a decimal such as 0.01' })
  rounding?: string | null;
}

export class PutPricingRulesBody {
  @IsArray()
  @ArrayMaxSize(10_000)
  @ValidateNested({ each: true })
  @Type(() => PricingRuleBody)
  rules!: PricingRuleBody[];
}
