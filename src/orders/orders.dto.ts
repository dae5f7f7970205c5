/** Request bodies and queries of the orders' internal API (CONTRACT §5), validated by class-validator. */
import { Transform } from 'class-transformer';
import { Equals, IsBoolean, IsIn, IsInt, IsObject, IsOptional, IsString, Length, Matches, MaxLength, Min, ValidateIf } from 'class-validator';
import { PageQuery } from '../common/pagination.js';
import { ORDER_STATUSES } from './order-state.js';

export const SHOP_ORDER_NO_RE = /^[A-Za-z0-9._:-]{1,64}$/;
const DECIMAL_RE = /^\d{1,15}(\.\d{1,8})?$/;

export class CreateOrderDto {
  @IsString()
  @Matches(SHOP_ORDER_NO_RE, { message: 'shop_order_no must match [A-Za-z0-9._:-]{1,64}' })
  shop_order_no!: string;

  @IsString()
  @Length(1, 255)
  sku_code!: string;

  @IsInt()
  @Min(1)
  quantity!: number;

  @IsOptional()
  @IsObject()
  manual_form_data?: Record<string, unknown>;

  @IsOptional()
  @IsString()
  @Matches(DECIMAL_RE, { message: 'max_unit_cost must be a decimal string such as 12.50' })
  max_unit_cost?: string;

  @IsOptional()
  @IsString()
  @MaxLength(128)
  trace_id?: string;
}

export class ListOrdersQuery extends PageQuery {
  @IsOptional()
  @IsIn(ORDER_STATUSES)
  status?: string;

  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean()
  stuck?: boolean;
}

export class ResolveOrderDto {
  @ValidateIf((o: ResolveOrderDto) => o.not_placed === undefined)
  @IsInt()
  @Min(1)
  upstream_order_id?: number;

  @ValidateIf((o: ResolveOrderDto) => o.upstream_order_id === undefined)
  @Equals(true, { message: 'not_placed must be true (or give upstream_order_id)' })
  not_placed?: boolean;

  @ValidateIf((o: ResolveOrderDto) => o.not_placed === true)
  @IsString()
  @Length(1, 500)
  reason?: string;
}
