/**
 * Lists of the internal API: `{ok, items, total, page, page_size}` with `page` ≥ 1 and
 * `page_size` 1–500 (default 100) — CONTRACT §5. Query DTOs extend `PageQuery`. `page` is at most
 * MAX_PAGE, so that the offset, (page - 1) × page_size, stays an exact integer in JavaScript and
 * within the database's bigint (a larger page would fail in the database: a 500).
 */
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

export const MAX_PAGE_SIZE = 500;
export const DEFAULT_PAGE_SIZE = 100;
/** The largest page: (MAX_PAGE - 1) × MAX_PAGE_SIZE ≤ Number.MAX_SAFE_INTEGER (< bigint's 2^63 - 1). */
export const MAX_PAGE = Math.floor(Number.MAX_SAFE_INTEGER / MAX_PAGE_SIZE);

export class PageQuery {
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE)
  page?: number;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  page_size?: number;
}

export interface PageRequest {
  page: number;
  pageSize: number;
  offset: number;
}

export function pageRequest(q: PageQuery): PageRequest {
  const page = q.page ?? 1;
  const pageSize = q.page_size ?? DEFAULT_PAGE_SIZE;
  return { page, pageSize, offset: (page - 1) * pageSize };
}

export interface ListResponse<T> {
  ok: true;
  items: T[];
  total: number;
  page: number;
  page_size: number;
}

export function listResponse<T>(items: T[], total: number, req: PageRequest): ListResponse<T> {
  return { ok: true, items, total, page: req.page, page_size: req.pageSize };
}
