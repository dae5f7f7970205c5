/** Request DTOs of the reconciliation's internal API (the global ValidationPipe answers 400 bad_request with `fields`). */
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { PageQuery } from '../common/pagination.js';
import { SHOP_ORDER_NO_RE } from '../orders/orders.dto.js';

export class StartReconciliationBody {
  @ApiProperty({ description: 'RFC 3339: the earliest `created_at` of the orders read', example: '2026-11-20T00:00:00Z' })
  @IsString()
  @MaxLength(64)
  from!: string;

  @ApiProperty({
    description: 'RFC 3339: the latest `created_at` of the orders read (included); not before `from`',
    example: '2026-11-22T00:00:00Z',
  })
  @IsString()
  @MaxLength(64)
  to!: string;
}

export class ReconciliationItemsQuery extends PageQuery {
  @ApiPropertyOptional({ description: 'only the differences of this order', example: 'SO-1001' })
  @IsOptional()
  @Matches(SHOP_ORDER_NO_RE, { message: 'shop_order_no must match [A-Za-z0-9._:-]{1,64}' })
  shop_order_no?: string;

  @ApiPropertyOptional({ description: 'only the differences found by this run', example: 'rec_20261122101500_7506e4e6' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  run_id?: string;
}

export class ReconciliationRunsQuery extends PageQuery {}
