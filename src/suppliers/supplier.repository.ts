/**
 * The `suppliers` table (migration 20261129130000): the suppliers added through the API, and the
 * env supplier's row (no secret: the environment holds it). An API secret is sealed with the first
 * PAYLOAD_ENCRYPTION_KEY (AES-256-GCM, the supplier's name as associated data) and opened with any
 * configured key, so keys rotate as the delivered items' do; `resealAll` moves every secret to the
 * first key.
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AppConfig, type UpstreamProfile } from '../config/app-config.js';
import { sqlRows } from '../ops/sql.js';
import { UNFINISHED } from '../orders/order-state.js';
import { decryptPayload, encryptPayload, keyId } from '../orders/payload-crypto.js';
import type { SupplierSettings } from './supplier.types.js';
import type { SuppliersRow } from '../database/rows.generated.js';

type Db = Pick<EntityManager, 'query'>;

/** A stored supplier, its secret opened. `settings` is only what the operator set. */
export interface StoredSupplier {
  name: string;
  baseUrl: string;
  apiKey: string;
  /** null for the env supplier (the environment holds it). */
  apiSecret: string | null;
  profile: UpstreamProfile;
  settings: Partial<SupplierSettings>;
  enabled: boolean;
  managedByEnv: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** What a write stores; the secret in clear (sealed here). */
export interface SupplierWrite {
  name: string;
  baseUrl: string;
  apiKey: string;
  apiSecret: string | null;
  profile: UpstreamProfile;
  settings: Partial<SupplierSettings>;
  enabled: boolean;
}

/** A supplier as COLUMNS reads it: the generated row, its profile and settings as the domain names them. */
type SupplierRow = Omit<SuppliersRow, 'profile' | 'settings'> & {
  profile: UpstreamProfile;
  settings: Partial<SupplierSettings> | string;
};

const COLUMNS = 'name, base_url, api_key, api_secret_sealed, profile, settings, enabled, managed_by_env, created_at, updated_at';
const aad = (name: string) => `supplier:${name}`;

@Injectable()
export class SupplierRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  async list(db: Db = this.dataSource): Promise<StoredSupplier[]> {
    const rows = await sqlRows<SupplierRow>(db, `SELECT ${COLUMNS} FROM suppliers ORDER BY managed_by_env DESC, name`);
    return rows.map((r) => this.fromRow(r));
  }

  async find(name: string, db: Db = this.dataSource): Promise<StoredSupplier | null> {
    const rows = await sqlRows<SupplierRow>(db, `SELECT ${COLUMNS} FROM suppliers WHERE name = $1`, [name]);
    return rows[0] ? this.fromRow(rows[0]) : null;
  }

  /** Inserts a supplier added through the API; false when the name is taken. */
  async insert(s: SupplierWrite, db: Db = this.dataSource): Promise<boolean> {
    const rows = await sqlRows<{ name: string }>(
      db,
      `INSERT INTO suppliers (name, base_url, api_key, api_secret_sealed, profile, settings, enabled)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7) ON CONFLICT (name) DO NOTHING RETURNING name`,
      [s.name, s.baseUrl, s.apiKey, this.seal(s.name, s.apiSecret), s.profile, JSON.stringify(s.settings), s.enabled],
    );
    return rows.length === 1;
  }

  /** Replaces a supplier's fields (not the env supplier's); false when no such supplier. */
  async update(s: SupplierWrite, db: Db = this.dataSource): Promise<boolean> {
    const rows = await sqlRows<{ name: string }>(
      db,
      `UPDATE suppliers SET base_url = $2, api_key = $3, api_secret_sealed = $4, profile = $5, settings = $6::jsonb,
         enabled = $7, updated_at = now()
       WHERE name = $1 AND NOT managed_by_env RETURNING name`,
      [s.name, s.baseUrl, s.apiKey, this.seal(s.name, s.apiSecret), s.profile, JSON.stringify(s.settings), s.enabled],
    );
    return rows.length === 1;
  }

  /** How many of a supplier's orders are unfinished (order-state's UNFINISHED): a supplier with any is not deleted. */
  async unfinishedOrders(name: string, db: Db = this.dataSource): Promise<number> {
    const rows = await sqlRows<{ n: string | number }>(db, `SELECT count(*) AS n FROM orders WHERE supplier = $1 AND status = ANY($2)`, [
      name,
      [...UNFINISHED],
    ]);
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Deletes a supplier added through the API, in one transaction, unless it has unfinished orders: the
   * supplier's row is locked first, so a concurrent change waits. `busy` with the count of unfinished
   * orders; null when there is no such supplier (or it is the env supplier). Its catalog is unlisted
   * after, through the catalog's write path (SupplierService.remove).
   */
  async deleteUnlessBusy(name: string): Promise<{ deleted: true } | { deleted: false; busy: number } | null> {
    return this.dataSource.transaction(async (m) => {
      const rows = await sqlRows<{ name: string }>(m, `SELECT name FROM suppliers WHERE name = $1 AND NOT managed_by_env FOR UPDATE`, [
        name,
      ]);
      if (rows.length === 0) return null;
      const busy = await this.unfinishedOrders(name, m);
      if (busy > 0) return { deleted: false as const, busy };
      await m.query(`DELETE FROM suppliers WHERE name = $1`, [name]);
      return { deleted: true as const };
    });
  }

  /**
   * Writes the env supplier's row at start (its secret is not stored). A row of that name added
   * through the API becomes the env supplier's: the environment decides what it is.
   */
  async writeEnvSupplier(s: Omit<SupplierWrite, 'apiSecret' | 'enabled'>, db: Db = this.dataSource): Promise<void> {
    await db.query(
      `INSERT INTO suppliers (name, base_url, api_key, api_secret_sealed, profile, settings, enabled, managed_by_env)
       VALUES ($1, $2, $3, NULL, $4, $5::jsonb, true, true)
       ON CONFLICT (name) DO UPDATE SET base_url = EXCLUDED.base_url, api_key = EXCLUDED.api_key, api_secret_sealed = NULL,
         profile = EXCLUDED.profile, settings = EXCLUDED.settings, enabled = true, managed_by_env = true, updated_at = now()
       WHERE suppliers.base_url IS DISTINCT FROM EXCLUDED.base_url OR suppliers.api_key IS DISTINCT FROM EXCLUDED.api_key
         OR suppliers.profile IS DISTINCT FROM EXCLUDED.profile OR suppliers.settings IS DISTINCT FROM EXCLUDED.settings
         OR NOT suppliers.managed_by_env OR NOT suppliers.enabled OR suppliers.api_secret_sealed IS NOT NULL`,
      [s.name, s.baseUrl, s.apiKey, s.profile, JSON.stringify(s.settings)],
    );
    // Another name that was the env supplier before (UPSTREAM_NAME changed) is an API supplier now only
    // if it has a secret; without one it cannot be used, so it is kept disabled for its orders' history.
    await db.query(`UPDATE suppliers SET managed_by_env = false, enabled = false, updated_at = now() WHERE managed_by_env AND name <> $1`, [
      s.name,
    ]);
  }

  /** Seals every stored secret with the first key again (after a key rotation); how many moved. */
  async resealAll(): Promise<number> {
    const keys = this.config.payloadKeys;
    if (keys.length < 2) return 0;
    const current = keyId(keys[0]);
    let moved = 0;
    for (const s of await sqlRows<SupplierRow>(this.dataSource, `SELECT ${COLUMNS} FROM suppliers WHERE api_secret_sealed IS NOT NULL`)) {
      const sealed = Buffer.from(s.api_secret_sealed!);
      if (sealed.subarray(1, 9).equals(current)) continue;
      const secret = this.open(s.name, sealed);
      await this.dataSource.query(`UPDATE suppliers SET api_secret_sealed = $2 WHERE name = $1 AND api_secret_sealed = $3`, [
        s.name,
        this.seal(s.name, secret),
        sealed,
      ]);
      moved++;
    }
    return moved;
  }

  private seal(name: string, secret: string | null): Buffer | null {
    if (secret === null) return null;
    if (this.config.payloadKeys.length === 0) throw new Error('PAYLOAD_ENCRYPTION_KEY: no key configured to seal a supplier secret');
    return encryptPayload(this.config.payloadKeys[0], secret, aad(name));
  }

  private open(name: string, sealed: Buffer): string {
    return decryptPayload(this.config.payloadKeys, sealed, aad(name)).toString('utf8');
  }

  private fromRow(r: SupplierRow): StoredSupplier {
    return {
      name: r.name,
      baseUrl: r.base_url,
      apiKey: r.api_key,
      apiSecret: r.api_secret_sealed === null ? null : this.open(r.name, Buffer.from(r.api_secret_sealed)),
      profile: r.profile,
      settings: typeof r.settings === 'string' ? (JSON.parse(r.settings) as Partial<SupplierSettings>) : r.settings,
      enabled: r.enabled,
      managedByEnv: r.managed_by_env,
      createdAt: new Date(r.created_at),
      updatedAt: new Date(r.updated_at),
    };
  }
}
