/**
 * The mirrored images (media_files, by SHA-256) and what the relay knows of each image URL
 * (media_sources: mirrored as a file, or refused). See migrations/20261129120000_catalog_products_media.
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { iconUrl, type SourceState } from './product-media.js';

export interface MirroredImage {
  sha256: string;
  ext: string;
  contentType: string;
  data: Buffer;
}

/** What a download of an image URL came to. */
export type MediaOutcome =
  { kind: 'mirrored'; url: string; file: MirroredImage } | { kind: 'refused'; url: string; reason: string; retryAt: Date | null };

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
      `SELECT url, sha256, ext, reason FROM media_sources WHERE url = ANY($1::text[]) AND (sha256 IS NOT NULL OR ` +
        `retry_at IS NULL OR retry_at > $2)`,
      [urls, now],
    )) as Array<{ url: string; sha256: string | null; ext: string | null; reason: string | null }>;
    for (const r of rows) {
      out.set(
        r.url,
        r.sha256 !== null
          ? { kind: 'mirrored', sha256: r.sha256, ext: r.ext ?? 'img' }
          : { kind: 'refused', reason: r.reason ?? 'unreachable' },
      );
    }
    return out;
  }

  /**
   * The outcomes of downloads, in one transaction: each image's file (once per content) and each URL's
   * source, mirrored or refused (for good when `retryAt` is null, else until it).
   */
  async record(outcomes: MediaOutcome[], now: Date): Promise<void> {
    if (outcomes.length === 0) return;
    const files = new Map<string, MirroredImage>();
    const sources = new Map<string, MediaOutcome>();
    for (const o of outcomes) {
      if (o.kind === 'mirrored') files.set(o.file.sha256, o.file);
      sources.set(o.url, o);
    }
    await this.dataSource.transaction(async (em) => {
      if (files.size > 0) {
        const params: unknown[] = [now];
        const rows = [...files.values()].map((f) => {
          params.push(f.sha256, f.ext, f.contentType, f.data.length, f.data);
          const n = params.length;
          return `($${n - 4}, $${n - 3}, $${n - 2}, $${n - 1}::int, $${n}::bytea, $1::timestamptz)`;
        });
        await em.query(
          `INSERT INTO media_files (sha256, ext, content_type, size, data, created_at) VALUES ${rows.join(', ')} ON ` +
            `CONFLICT (sha256) DO NOTHING`,
          params,
        );
      }
      const list = [...sources.values()].map((o) =>
        o.kind === 'mirrored'
          ? { url: o.url, sha256: o.file.sha256, ext: o.file.ext, reason: null, retry_at: null }
          : { url: o.url, sha256: null, ext: null, reason: o.reason, retry_at: o.retryAt?.toISOString() ?? null },
      );
      await em.query(
        `INSERT INTO media_sources (url, sha256, ext, reason, retry_at, fetched_at)
         SELECT url, sha256, ext, reason, retry_at, $2 FROM jsonb_to_recordset($1::jsonb) AS x(url text, sha256 text, ext text,
           reason text, retry_at timestamptz)
         ON CONFLICT (url) DO UPDATE SET sha256 = EXCLUDED.sha256, ext = EXCLUDED.ext, reason = EXCLUDED.reason, retry_at =
           EXCLUDED.retry_at, fetched_at = EXCLUDED.fetched_at`,
        [JSON.stringify(list), now],
      );
    });
  }

  /** A mirrored file by its SHA-256 and extension (null when there is none). */
  async file(sha256: string, ext: string): Promise<MediaFile | null> {
    const rows = (await this.dataSource.query(`SELECT sha256, ext, content_type, data FROM media_files WHERE sha256 = $1 AND ext = $2`, [
      sha256,
      ext,
    ])) as MediaFile[];
    return rows[0] ?? null;
  }

  /** The URLs the stored categories' icons are fetched from (relative ones resolved against `origin`). */
  async categoryIconUrls(origin: string): Promise<string[]> {
    const rows = (await this.dataSource.query(`SELECT DISTINCT icon FROM catalog_categories WHERE icon <> ''`)) as Array<{ icon: string }>;
    return rows.map((r) => iconUrl(r.icon, origin)).filter((u): u is string => u !== null);
  }

  /**
   * The retention of images: every URL no product and no category icon (`origin`: the supplier's, for
   * the icons' relative URLs) uses any more is forgotten, then every file no URL names is deleted; only
   * rows older than `before`, so that an image fetched while a product is being written is never taken
   * from under it. Returns how many of each were deleted.
   */
  async deleteUnused(before: Date, origin: string): Promise<{ sources: number; files: number }> {
    const icons = await this.categoryIconUrls(origin);
    const sources = (await this.dataSource.query(
      `WITH d AS (DELETE FROM media_sources s WHERE s.fetched_at < $1 AND NOT (s.url = ANY($2::text[]))
                    AND NOT EXISTS (SELECT 1 FROM catalog_product_media pm WHERE pm.url = s.url) RETURNING 1)
       SELECT count(*)::int AS n FROM d`,
      [before, icons],
    )) as Array<{ n: number }>;
    const files = (await this.dataSource.query(
      `WITH d AS (DELETE FROM media_files f WHERE f.created_at < $1 AND NOT EXISTS (SELECT 1 FROM media_sources s WHERE ` +
        `s.sha256 = f.sha256) RETURNING 1) SELECT count(*)::int AS n FROM d`,
      [before],
    )) as Array<{ n: number }>;
    return { sources: sources[0]?.n ?? 0, files: files[0]?.n ?? 0 };
  }
}
