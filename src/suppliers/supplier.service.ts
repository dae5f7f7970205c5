/**
 * `/internal/suppliers` (CONTRACT §10): list, add, change, disable and delete the suppliers kept in
 * the database. A supplier's credentials are pinged (`POST /ping` through a runtime of its own that is
 * closed after) before anything is saved: 502 `upstream_auth_failed` or 503 `upstream_unavailable`,
 * and nothing changes. The `UPSTREAM_*` supplier is the environment's: 409 `supplier_managed_by_env`.
 * After every change this process's registry reads the suppliers again (other replicas within
 * RELOAD_MS). Secrets are never answered or logged: the key's hint only.
 */
import { Injectable, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { CatalogService } from '../catalog/catalog.service.js';
import { AppError } from '../common/app-error.js';
import { AppConfig } from '../config/app-config.js';
import { redactUrl } from '../config/redact-url.js';
import type { UpstreamPing } from '../upstream/upstream.types.js';
import { apiKeyHint } from './supplier-config.js';
import {
  needsPing,
  patchedSettings,
  pingRefusal,
  readSupplierCreate,
  readSupplierPatch,
  type SupplierCreateInput,
} from './supplier-input.js';
import { SupplierRegistry, supplierNotFound, type SupplierRuntime } from './supplier-registry.service.js';
import { SupplierStatusSource, type SupplierStatus } from './supplier-status.source.js';
import { SupplierRepository, type StoredSupplier } from './supplier.repository.js';
import { supplierCallbackUrl, toSupplierResponse, type SupplierResponse } from './supplier.responses.js';
import type { SupplierConfig } from './supplier.types.js';

/** The longest a candidate's ping waits for its key's request budget. */
const PING_BUDGET_WAIT_MS = 10_000;

@Injectable()
export class SupplierService {
  private readonly logger = new Logger('suppliers');

  constructor(
    private readonly config: AppConfig,
    private readonly registry: SupplierRegistry,
    private readonly repo: SupplierRepository,
    private readonly status: SupplierStatusSource,
    private readonly moduleRef: ModuleRef,
  ) {}

  async list(): Promise<SupplierResponse[]> {
    await this.registry.reload();
    return Promise.all(this.registry.list().map((r) => this.answer(r)));
  }

  async get(name: string): Promise<SupplierResponse> {
    return this.answer(await this.registry.resolve(name));
  }

  async add(body: unknown): Promise<SupplierResponse> {
    const input = readSupplierCreate(body);
    if (!input.ok) throw badInput(input.fields);
    const s = input.value;
    const taken = s.name === this.registry.envName ? null : await this.repo.find(s.name);
    if (s.name === this.registry.envName || taken?.managedByEnv) throw managedByEnv(s.name);
    if (taken) throw exists(s.name);
    const stored: StoredSupplier & { apiSecret: string } = { ...s, managedByEnv: false, createdAt: new Date(), updatedAt: new Date() };
    const candidate = this.registry.configOf(stored);
    const pong = await this.ping(candidate);
    if (!(await this.repo.insert(s))) throw exists(s.name);
    await this.registry.reload();
    this.logger.log({
      msg: `supplier ${s.name} added`,
      supplier: s.name,
      base_url: redactUrl(s.baseUrl),
      api_key_hint: apiKeyHint(s.apiKey),
      enabled: s.enabled,
    });
    return this.answer(this.registry.get(s.name), pong);
  }

  async change(name: string, body: unknown): Promise<SupplierResponse> {
    if (name === this.registry.envName) throw managedByEnv(name);
    const stored = await this.repo.find(name);
    if (!stored) throw supplierNotFound(name);
    if (stored.managedByEnv) throw managedByEnv(name);
    const input = readSupplierPatch(name, body);
    if (!input.ok) throw badInput(input.fields);
    const p = input.value;
    // a former env supplier (UPSTREAM_NAME changed) has no stored secret: it takes one to be used again
    const apiSecret = p.apiSecret ?? stored.apiSecret;
    if (apiSecret === null) throw badInput({ api_secret: ['is required: no secret is stored for this supplier'] });
    const next = {
      ...stored,
      apiSecret,
      baseUrl: p.baseUrl ?? stored.baseUrl,
      apiKey: p.apiKey ?? stored.apiKey,
      profile: p.profile ?? stored.profile,
      enabled: p.enabled ?? stored.enabled,
      settings: patchedSettings(stored.settings, p.settings),
    };
    const after = this.registry.configOf(next);
    const before = stored.apiSecret === null ? null : this.registry.configOf({ ...stored, apiSecret: stored.apiSecret });
    const pong = before === null || needsPing(before, after) ? await this.ping(after) : undefined;
    if (!(await this.repo.update(next))) throw supplierNotFound(name);
    await this.registry.reload();
    this.logger.log({
      msg: `supplier ${name} changed`,
      supplier: name,
      fields: Object.keys(body as object),
      enabled: next.enabled,
      api_key_hint: apiKeyHint(next.apiKey),
    });
    return this.answer(this.registry.get(name), pong);
  }

  /** Deletes a supplier without unfinished orders and unlists its SKUs; its orders keep their history. */
  async remove(name: string): Promise<{ name: string; skus_unlisted: number }> {
    if (name === this.registry.envName) throw managedByEnv(name);
    const stored = await this.repo.find(name);
    if (!stored) throw supplierNotFound(name);
    if (stored.managedByEnv) throw managedByEnv(name);
    const done = await this.repo.deleteUnlessBusy(name);
    if (done === null) throw supplierNotFound(name);
    if (!done.deleted) {
      throw new AppError('supplier_busy', `supplier ${name} has ${done.busy} unfinished order(s): delete it once they end`, {
        supplier: name,
        unfinished_orders: done.busy,
      });
    }
    await this.registry.reload();
    // its SKUs, products and categories unlisted as every catalog change is: recorded in their history,
    // announced to the shop, the offers over them valued again (the catalog is resolved here, not
    // injected: the catalog's module depends on this global one)
    const unlisted = await this.moduleRef.get(CatalogService, { strict: false }).unlistSupplier(name);
    this.logger.log({ msg: `supplier ${name} deleted, ${unlisted} SKU(s) unlisted`, supplier: name, skus_unlisted: unlisted });
    return { name, skus_unlisted: unlisted };
  }

  /**
   * Stores a built-in sandbox as a supplier at start (`sandbox-2`…, the zero-config start with
   * several sandboxes): added, or its address and credentials written again (its port may differ
   * from the last start); no ping (the sandbox runs in this process).
   */
  async storeBuiltIn(s: SupplierCreateInput): Promise<void> {
    const stored = await this.repo.find(s.name);
    // an operator's later change (disabled, settings) stays
    const write = stored ? { ...s, enabled: stored.enabled, settings: stored.settings } : s;
    if (!(await this.repo.insert(write)) && !(await this.repo.update(write))) {
      throw new Error(`supplier ${s.name} is the UPSTREAM_* supplier: a built-in sandbox cannot take its name`);
    }
    await this.registry.reload();
    this.logger.log({ msg: `built-in sandbox supplier ${s.name} at ${s.baseUrl}`, supplier: s.name, base_url: s.baseUrl });
  }

  /**
   * `POST /ping` with a candidate's credentials, through a runtime of its own (its own budget and
   * sockets), closed after; a refusal is the API's error and nothing is saved.
   */
  private async ping(candidate: SupplierConfig): Promise<{ pong: UpstreamPing; at: Date }> {
    const runtime = this.registry.open(candidate);
    try {
      const pong = await runtime.client.ping(undefined, { priority: 'create', maxWaitMs: PING_BUDGET_WAIT_MS });
      return { pong, at: new Date() };
    } catch (e) {
      const { verdict, reason } = pingRefusal(e);
      this.logger.warn({
        msg: `supplier ${candidate.name}: the ping of its credentials failed (${verdict}: ${reason}); nothing saved`,
        supplier: candidate.name,
        base_url: redactUrl(candidate.baseUrl),
        api_key_hint: apiKeyHint(candidate.apiKey),
      });
      if (verdict === 'auth_failed') {
        throw new AppError('upstream_auth_failed', `the upstream refused the credentials: ${reason}; nothing was saved`, {
          supplier: candidate.name,
        });
      }
      throw new AppError('upstream_unavailable', `the upstream could not be pinged: ${reason}; nothing was saved`, {
        supplier: candidate.name,
      });
    } finally {
      await this.registry.close(runtime);
    }
  }

  /** The answer, with what the ping of this request saw (the upstream up, the wallet) when there was one. */
  private async answer(runtime: SupplierRuntime, ping?: { pong: UpstreamPing; at: Date }): Promise<SupplierResponse> {
    let status: SupplierStatus = await this.status.read(runtime);
    if (ping) {
      const at = ping.at.toISOString();
      status = {
        ...status,
        health: { ...status.health, upstream: status.health.upstream ?? 'up', checked_at: status.health.checked_at ?? at },
        wallet: { balance: ping.pong.balance, currency: ping.pong.currency, checked_at: at },
      };
    }
    return toSupplierResponse(runtime.config, status, supplierCallbackUrl(this.config.callbacks.publicUrl, runtime.config));
  }
}

const badInput = (fields: Record<string, string[]>) =>
  new AppError('bad_request', `invalid request: ${Object.keys(fields).join(', ')}`, { fields });
const exists = (name: string) => new AppError('supplier_exists', `a supplier named "${name}" exists already`, { supplier: name });
const managedByEnv = (name: string) =>
  new AppError('supplier_managed_by_env', `supplier "${name}" is defined by the UPSTREAM_* variables: change it through the environment`, {
    supplier: name,
  });
