/**
 * The offers' request shapes. The PUT body is documented here and checked by offer-input.ts (pure,
 * with the sources' facts), not by class-validator; the list's query is the global pipe's.
 */
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional, IsRFC3339 } from 'class-validator';
import { PageQuery } from '../common/pagination.js';
import { MAX_SOURCES, MAX_TITLE_LENGTH, ROUTINGS } from './offer-input.js';

const toBoolean = ({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value);

export class OfferSourceBody {
  @ApiProperty({ type: String, pattern: '^[a-z][a-z0-9-]{0,31}$', description: 'a supplier (CONTRACT §10)', example: 'main' })
  supplier!: string;

  @ApiProperty({
    type: String,
    pattern: '^[0-9]+:.+$',
    description: "a SKU of that supplier's catalog, by its `sku_key` (`<product id>:<sku_code>`)",
    example: '42:SKU-00042-1',
  })
  sku_key!: string;
}

export class PutOfferBody {
  @ApiPropertyOptional({ type: String, nullable: true, maxLength: MAX_TITLE_LENGTH, description: "the operator's name for it" })
  title?: string | null;

  @ApiProperty({
    enum: ROUTINGS,
    description: '`priority`: the sources in their order; `cheapest`: by ascending current cost (ties: their order)',
  })
  routing!: string;

  @ApiProperty({
    type: [OfferSourceBody],
    minItems: 1,
    maxItems: MAX_SOURCES,
    description: `1–${MAX_SOURCES} sources, no SKU twice, all of one currency`,
  })
  sources!: OfferSourceBody[];

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    pattern: '^\\d{1,15}(\\.\\d{1,8})?$',
    description: 'a decimal string > 0; absent or null: the pricing rules applied to the highest cost among the available sources',
    example: '55.00',
  })
  sale_price?: string | null;
}

export class OfferListQuery extends PageQuery {
  @ApiPropertyOptional({ type: Boolean, description: 'available = any source available' })
  @IsOptional()
  @Transform(toBoolean)
  @IsBoolean({ message: 'available must be true or false' })
  available?: boolean;

  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    description: 'RFC 3339: the offers whose `updated_at` (sale price or availability) is later, ordered by `updated_at`, then `code`',
    example: '2026-11-22T09:00:00Z',
  })
  @IsOptional()
  @IsRFC3339({ message: 'changed_since must be an RFC 3339 date-time, e.g. 2026-01-01T00:00:00Z' })
  changed_since?: string;
}
