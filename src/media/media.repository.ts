/**
 * The mirrored images (media_files, by SHA-256) and what the relay knows of each image URL
 * (media_sources: mirrored as a file, or refused). See migrations/20261129120000_catalog_products_media.
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { SourceState } from './product-media.js';

export interface MediaFile {
  sha256: string;
  ext: string;
  content_type: string;
  data: Buffer;
}

@Injectable()
export class MediaRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * What is known of these URLs. A transient refusal whose `retry_at` has passed is unknown again (it
   * is fetched again).
   */
  async sources(urls: string[], now: Date): Promise<Map<string, SourceState>> {
    const out = new Map<string, SourceState>();
    if (urls.length === 0) return out;
    const rows = (await this.dataSource.query(
      `SELECT url, sha256, ext, reason FROM media_sources WHERE url = ANY($1::text[]) AND (sha256 IS NOT NULL OR retry_at IS NULL OR retry_at > $2)`,
      [urls, now],
    )) as Array<{ url: string; sha256: string | null; ext: string | null; reason: string | null }>;
    for (const r of rows) {
      out.set(r.url, r.sha256 !== null ? { kind: 'mirrored', sha256: r.sha256, ext: r.ext ?? 'img' } : { kind: 'refused', reason: r.reason ?? 'unreachable' });
    }
    return out;
  }

  /** A fetched image: its file (once per content) and its URL's source, in one transaction. */
  async recordMirrored(url: string, file: { sha256: string; ext: string; contentType: string; data: Buffer }, now: Date): Promise<void> {
    await this.dataSource.transaction(async (em) => {
      await em.query(
        `INSERT INTO media_files (sha256, ext, content_type, size, data, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (sha256) DO NOTHING`,
        [file.sha256, file.ext, file.contentType, file.data.length, file.data, now],
      );
      await em.query(
        `INSERT INTO media_sources (url, sha256, ext, reason, retry_at, fetched_at) VALUES ($1, $2, $3, NULL, NULL, $4)
         ON CONFLICT (url) DO UPDATE SET sha256 = EXCLUDED.sha256, ext = EXCLUDED.ext, reason = NULL, retry_at = NULL, fetched_at = EXCLUDED.fetched_at`,
        [url, file.sha256, file.ext, now],
      );
    });
  }

  /** A refused URL: for good (`retryAt` null) or until `retryAt`. */
  async recordRefused(url: string, reason: string, retryAt: Date | null, now: Date): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO media_sources (url, sha256, ext, reason, retry_at, fetched_at) VALUES ($1, NULL, NULL, $2, $3, $4)
       ON CONFLICT (url) DO UPDATE SET sha256 = NULL, ext = NULL, reason = EXCLUDED.reason, retry_at = EXCLUDED.retry_at, fetched_at = EXCLUDED.fetched_at`,
      [url, reason, retryAt, now],
    );
  }

  /** A mirrored file by its SHA-256 and extension (null when there is none). */
  async file(sha256: string, ext: string): Promise<MediaFile | null> {
    const rows = (await this.dataSource.query(`SELECT sha256, ext, content_type, data FROM media_files WHERE sha256 = $1 AND ext = $2`, [sha256, ext])) as MediaFile[];
    return rows[0] ?? null;
  }

  /**
   * The retention of images: every URL no product uses any more is forgotten, then every file no URL
   * names is deleted; only rows older than `before`, so that an image fetched while a product is being
   * written is never taken from under it. Returns how many of each were deleted.
   */
  async deleteUnused(before: Date): Promise<{ sources: number; files: number }> {
    const sources = (await this.dataSource.query(
      `WITH d AS (DELETE FROM media_sources s WHERE s.fetched_at < $1 AND NOT EXISTS (SELECT 1 FROM catalog_product_media pm WHERE pm.url = s.url) RETURNING 1) SELECT count(*)::int AS n FROM d`,
      [before],
    )) as Array<{ n: number }>;
    const files = (await this.dataSource.query(
      `WITH d AS (DELETE FROM media_files f WHERE f.created_at < $1 AND NOT EXISTS (SELECT 1 FROM media_sources s WHERE s.sha256 = f.sha256) RETURNING 1) SELECT count(*)::int AS n FROM d`,
      [before],
    )) as Array<{ n: number }>;
    return { sources: sources[0]?.n ?? 0, files: files[0]?.n ?? 0 };
  }
}
