/**
 * Operator alerts: a supplier's wallet below WALLET_LOW_BALANCE, a stuck order, a failed catalog sync,
 * a supplier refusing our credentials. Each alert is a log line (level warn, `alert` field), a count in
 * `relay_alerts_total{kind}` and a shop notification (`alert.wallet_low`, `alert.order_stuck`,
 * `alert.sync_failed`, `alert.upstream_auth_failed`, through the outbox).
 *
 * Deduplicated across replicas and restarts: one alert per condition (a supplier's wallet; an order; a
 * sync run; a supplier's credentials) per ALERT_REPEAT_MS, kept as `alert:<kind>:<subject>` in `relay_state` and claimed with one
 * conditional upsert, in the same transaction as the outbox row. The caller may hand its own
 * transaction (`manager`) so that the alert commits with the change it reports, and then must hand its
 * `afterCommit` too (both or neither; a manager alone is refused) so that the log line and the metric
 * wait for the commit (and are not emitted when it rolls back). The outbox subject is
 * `<kind>:<subject>` (e.g. `order_stuck:SO-1`), never a bare order number or sku code: an alert does
 * not join (nor hold back) an order's own ordered events.
 *
 * The wallet alert clears: a check that finds the balance at or above WALLET_LOW_BALANCE while the
 * alert is active (its `alert:wallet_low:wallet` key says `active: true`) marks it cleared (one
 * conditional UPDATE decides, across replicas, who clears) and, in the same transaction, writes
 * `alert.wallet_recovered` under the alert's own subject `wallet_low:wallet` (so the shop gets it
 * after the alert it clears); an `info` log line (`alert: 'wallet_recovered'`) follows the commit.
 * Not an alert: no count in `relay_alerts_total`. The key keeps the time of the alert, so a new drop
 * alerts once the hour since that alert is over: a balance going back and forth across the threshold
 * gives at most one alert and one recovery an hour. A key written before alerts cleared has no
 * `active` and never gives a recovery. The other alerts do not clear (an order's stuck flag and a failed
 * run are their own record).
 *
 * Payloads (`data` of the webhook): every alert has `kind` and `at` (when it was raised), and its own
 * fields; `sync_failed` also has `failed_at` (the end of the run), as the catalog wrote it before it
 * went through here.
 *
 * The wallet's subject is `wallet` for the `UPSTREAM_*` supplier and `wallet:<supplier>` for another
 * one; its payloads name the `supplier`. `upstream_auth_failed` (subject the supplier's name) says that
 * a supplier answered 401/403 to our ping: a wrong key or secret, a disabled API user.
 *
 * Callers: the periodic ping (ops/upstream-monitor.service.ts) calls `checkSupplierWallet` and
 * `upstreamAuthFailed` for each supplier (the orders module
 * asks for a ping soon after an order, `UpstreamMonitor.pingSoon`); the orders module calls
 * `orderStuck` for newly stuck orders (OrderPoller, in the transaction that flags them);
 * the catalog module calls `syncFailed` in the transaction that records a run as failed
 * (CatalogSyncService).
 */
import { Injectable, Logger } from '@nestjs/common';
import { Decimal } from 'decimal.js';
import { DataSource, type EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { OutboxWriter, type OutboxEventType } from '../notifications/outbox.writer.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { Metrics } from './metrics.service.js';
import { OpsStateRepository } from './ops-state.repository.js';

export type AlertKind = 'wallet_low' | 'order_stuck' | 'sync_failed' | 'upstream_auth_failed';

/** The same condition alerts again after this long at the earliest. */
export const ALERT_REPEAT_MS = 3_600_000;

/** The `relay_state` key of the `UPSTREAM_*` supplier's wallet alert while it is active. */
export const WALLET_LOW_KEY = 'alert:wallet_low:wallet';

/** The subject of a supplier's wallet alert: `wallet` for the `UPSTREAM_*` supplier, `wallet:<name>` for another. */
const walletSubject = (supplier: string, envName: string): string => (supplier === envName ? 'wallet' : `wallet:${supplier}`);

export interface UpstreamAuthFailedAlert {
  supplier: string;
  /** What the upstream answered (a class, a code and the HTTP status; never a secret). */
  error: string | null;
  httpStatus: number | null;
}

export interface WalletLowAlert {
  balance: string;
  currency: string;
  /** Default: WALLET_LOW_BALANCE. */
  threshold?: string;
}

export interface OrderStuckAlert {
  shopOrderNo: string;
  status: string;
  /** Last progress of the order. */
  since: Date | string;
  traceId?: string | null;
}

export interface SyncFailedAlert {
  runId: string;
  mode?: string | null;
  error?: string | null;
  /** When the run was recorded failed. Default: now. */
  failedAt?: Date | string;
}

/** Runs a side effect once the caller's transaction has committed (e.g. `OrderTx.afterCommit`). */
export type AfterCommit = (effect: () => void) => void;

/**
 * The caller's transaction, when the alert is to commit with it: its manager and its afterCommit,
 * both or neither (without them the alert has a transaction of its own).
 */
export type InTransaction = [] | [manager: EntityManager, afterCommit: AfterCommit];

const iso = (d: Date | string): string => (d instanceof Date ? d.toISOString() : new Date(d).toISOString());

@Injectable()
export class AlertService {
  private readonly logger = new Logger('alerts');

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly outbox: OutboxWriter,
    private readonly dataSource: DataSource,
    private readonly state: OpsStateRepository,
    private readonly suppliers: SupplierRegistry,
  ) {}

  /**
   * Compares a wallet balance with WALLET_LOW_BALANCE (nothing to do without one): raises
   * `wallet_low` when it is below, clears an active one when it is not (`alert.wallet_recovered`);
   * sets the `relay_wallet_balance` gauge either way. Returns whether an alert was raised now (false
   * when below but already raised within the hour).
   */
  checkWallet(balance: string, currency: string, ...tx: InTransaction): Promise<boolean> {
    return this.checkWalletOf(this.suppliers.envName, balance, currency, tx);
  }

  /** `checkWallet` for a supplier's wallet (its gauge labelled, its alert of its own). */
  checkSupplierWallet(supplier: string, balance: string, currency: string): Promise<boolean> {
    return this.checkWalletOf(supplier, balance, currency, []);
  }

  private async checkWalletOf(supplier: string, balance: string, currency: string, tx: InTransaction): Promise<boolean> {
    const value = Number(balance);
    if (Number.isFinite(value)) this.metrics.walletBalance.set({ currency, supplier }, value);
    const threshold = this.config.walletLowBalance;
    if (threshold === null) return false;
    let low: boolean;
    try {
      low = new Decimal(balance).lt(new Decimal(threshold));
    } catch {
      return false;
    }
    if (low) return this.walletLowOf(supplier, { balance, currency, threshold }, tx);
    await this.walletRecovered(supplier, { balance, currency, threshold }, tx);
    return false;
  }

  /** The `UPSTREAM_*` supplier's wallet is low. */
  walletLow(a: WalletLowAlert, ...tx: InTransaction): Promise<boolean> {
    return this.walletLowOf(this.suppliers.envName, a, tx);
  }

  private walletLowOf(supplier: string, a: WalletLowAlert, tx: InTransaction): Promise<boolean> {
    const threshold = a.threshold ?? this.config.walletLowBalance;
    return this.raise(
      'wallet_low',
      walletSubject(supplier, this.suppliers.envName),
      { supplier, balance: a.balance, currency: a.currency, threshold },
      `supplier ${supplier}: upstream wallet balance ${a.balance} ${a.currency} is below WALLET_LOW_BALANCE ${threshold ?? '?'}`,
      { supplier, balance: a.balance, currency: a.currency, threshold },
      tx,
    );
  }

  /** A supplier refused our credentials (HTTP 401/403 to a ping). */
  upstreamAuthFailed(a: UpstreamAuthFailedAlert, ...tx: InTransaction): Promise<boolean> {
    const error = a.error ? a.error.slice(0, 500) : null;
    return this.raise(
      'upstream_auth_failed',
      a.supplier,
      { supplier: a.supplier, http_status: a.httpStatus, error },
      `supplier ${a.supplier} refuses our credentials (check its API key and secret)${error ? `: ${error}` : ''}`,
      { supplier: a.supplier, http_status: a.httpStatus, error },
      tx,
    );
  }

  orderStuck(a: OrderStuckAlert, ...tx: InTransaction): Promise<boolean> {
    const since = iso(a.since);
    return this.raise(
      'order_stuck',
      a.shopOrderNo,
      { shop_order_no: a.shopOrderNo, status: a.status, since, trace_id: a.traceId ?? null },
      `order ${a.shopOrderNo} is stuck in ${a.status} since ${since}`,
      { shop_order_no: a.shopOrderNo, trace_id: a.traceId ?? undefined, status: a.status, since },
      tx,
    );
  }

  syncFailed(a: SyncFailedAlert, ...tx: InTransaction): Promise<boolean> {
    const error = a.error ? a.error.slice(0, 500) : null;
    const failedAt = iso(a.failedAt ?? this.clock.now());
    return this.raise(
      'sync_failed',
      a.runId,
      { run_id: a.runId, mode: a.mode ?? null, error, failed_at: failedAt },
      `catalog sync ${a.runId} failed${error ? `: ${error}` : ''}`,
      { run_id: a.runId, mode: a.mode ?? undefined, error },
      tx,
    );
  }

  /**
   * Clears an active `wallet_low` (see the header): the key deleted and `alert.wallet_recovered`
   * written in one transaction, by the one caller whose DELETE found the key. Returns whether it
   * cleared it.
   */
  private walletRecovered(supplier: string, a: Required<WalletLowAlert>, tx: InTransaction): Promise<boolean> {
    const now = this.clock.now();
    const subject = walletSubject(supplier, this.suppliers.envName);
    const clear = async (em: EntityManager): Promise<boolean> => {
      // The key stays (with its time, so a new drop within the hour of the alert stays quiet: a balance
      // going back and forth across the threshold alerts and recovers at most once an hour); only an
      // active alert clears, and only once. Keys written before alerts cleared have no `active`: never
      // "recovered" for an alert that ended long ago.
      if (!(await this.state.clearAlert(em, `alert:wallet_low:${subject}`, now))) return false;
      await this.outbox.append(em, [
        {
          type: 'alert.wallet_recovered',
          subject: `wallet_low:${subject}`,
          payload: {
            kind: 'wallet_recovered',
            supplier,
            balance: a.balance,
            currency: a.currency,
            threshold: a.threshold,
            at: now.toISOString(),
          },
        },
      ]);
      return true;
    };
    return this.commitThenReport(tx, clear, () =>
      this.logger.log({
        supplier,
        balance: a.balance,
        currency: a.currency,
        threshold: a.threshold,
        alert: 'wallet_recovered',
        msg:
          `alert wallet_low cleared: supplier ${supplier}'s upstream wallet balance ${a.balance} ${a.currency} is ` +
          `back at or above WALLET_LOW_BALANCE ${a.threshold}`,
      }),
    );
  }

  private async raise(
    kind: AlertKind,
    subject: string,
    payload: Record<string, unknown>,
    message: string,
    logFields: Record<string, unknown>,
    tx: InTransaction,
  ): Promise<boolean> {
    const now = this.clock.now();
    const key = `alert:${kind}:${subject}`;
    const claim = async (em: EntityManager): Promise<boolean> => {
      // `active`: raised and not cleared since (only the wallet alert clears, walletRecovered)
      const value = { kind, subject, raised_at: now.toISOString(), active: true, ...payload };
      if (!(await this.state.claimAlert(em, key, value, now, new Date(now.getTime() - ALERT_REPEAT_MS)))) return false;
      await this.outbox.append(em, [
        { type: `alert.${kind}` as OutboxEventType, subject: `${kind}:${subject}`, payload: { kind, ...payload, at: now.toISOString() } },
      ]);
      return true;
    };
    return this.commitThenReport(tx, claim, () => {
      this.metrics.alerts.inc({ kind });
      this.logger.warn({ ...logFields, alert: kind, msg: `alert ${kind}: ${message}` });
    });
  }

  /**
   * Runs `work` in the caller's transaction (`tx`) or in one of its own; when it wrote something
   * (true), `report` (log line, metric) runs once that transaction has committed.
   */
  private async commitThenReport(tx: InTransaction, work: (em: EntityManager) => Promise<boolean>, report: () => void): Promise<boolean> {
    const [manager, afterCommit] = inTransaction(tx);
    const wrote = manager ? await work(manager) : await this.dataSource.transaction(work);
    if (wrote) {
      if (afterCommit) afterCommit(report);
      else report();
    }
    return wrote;
  }
}

/** The caller's manager and afterCommit; refuses one without the other (a JavaScript caller, an `undefined`). */
function inTransaction(tx: InTransaction): [EntityManager | undefined, AfterCommit | undefined] {
  const [manager, afterCommit] = tx as [EntityManager | undefined, AfterCommit | undefined];
  if ((manager === undefined) !== (afterCommit === undefined)) {
    throw new Error("an alert in the caller's transaction needs both its manager and its afterCommit");
  }
  return [manager, afterCommit];
}
