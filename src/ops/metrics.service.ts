/**
 * Every Prometheus metric of the service in one place (names prefixed `relay_`), on a registry of
 * the instance's own so that several app instances in one process (tests) do not collide.
 */
import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

@Injectable()
export class Metrics {
  readonly registry = new Registry();

  // Upstream calls
  readonly upstreamCalls = new Counter({
    name: 'relay_upstream_calls_total',
    help: 'Upstream API calls by operation and outcome class (ok, definitive, retryable, unknown).',
    labelNames: ['operation', 'outcome', 'supplier'] as const,
    registers: [this.registry],
  });
  readonly upstreamLatency = new Histogram({
    name: 'relay_upstream_call_duration_seconds',
    help: 'Upstream API call latency by operation.',
    labelNames: ['operation', 'supplier'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  // Upstream request budget (src/budget)
  readonly budgetTokensLeft = new Gauge({
    name: 'relay_upstream_budget_tokens_left',
    help: 'Upstream requests the budget still allows in the window ending at its last decision (all replicas together).',
    labelNames: ['supplier'] as const,
    registers: [this.registry],
  });
  readonly budgetGrants = new Counter({
    name: 'relay_upstream_budget_grants_total',
    help: 'Upstream requests granted by the budget, by class (create, deliver, price, poll, sync, reconcile).',
    labelNames: ['class', 'supplier'] as const,
    registers: [this.registry],
  });
  readonly budgetWait = new Histogram({
    name: 'relay_upstream_budget_wait_seconds',
    help: 'Time an upstream request waited for the budget before it was granted, by class.',
    labelNames: ['class', 'supplier'] as const,
    buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly budgetWaitExceeded = new Counter({
    name: 'relay_upstream_budget_wait_exceeded_total',
    help: 'Upstream requests not sent because their wait for the budget passed its limit, by class.',
    labelNames: ['class', 'supplier'] as const,
    registers: [this.registry],
  });
  readonly upstreamRateLimited = new Counter({
    name: 'relay_upstream_rate_limited_total',
    help: 'Upstream answers HTTP 429 (rate limited), by operation.',
    labelNames: ['operation', 'supplier'] as const,
    registers: [this.registry],
  });
  readonly upstreamBlocks = new Counter({
    name: 'relay_upstream_blocks_total',
    help: 'Blocks of the upstream key started after a 429 (every replica stops sending until it ends).',
    labelNames: ['supplier'] as const,
    registers: [this.registry],
  });

  // Catalog sync
  readonly offerRouted = new Counter({
    name: 'relay_offer_orders_routed_total',
    help:
      'Orders placed through an offer (CONTRACT §11) that a source took (placed, or sent with its outcome unknown), ' +
      'by that source supplier.',
    labelNames: ['supplier'] as const,
    registers: [this.registry],
  });

  readonly offerFailovers = new Counter({
    name: 'relay_offer_failovers_total',
    help: 'Offer orders moved on from a source after a definitive refusal before any charge, by the refusal (error code).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly syncRuns = new Counter({
    name: 'relay_sync_runs_total',
    help: 'Catalog sync runs by mode and final status.',
    labelNames: ['mode', 'status', 'supplier'] as const,
    registers: [this.registry],
  });
  readonly syncDuration = new Histogram({
    name: 'relay_sync_duration_seconds',
    help: 'Catalog sync run duration.',
    labelNames: ['mode', 'supplier'] as const,
    buckets: [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800],
    registers: [this.registry],
  });
  readonly syncPages = new Counter({
    name: 'relay_sync_pages_total',
    help: 'Product pages fetched by catalog syncs.',
    labelNames: ['supplier'] as const,
    registers: [this.registry],
  });
  readonly syncChanges = new Counter({
    name: 'relay_sync_changes_total',
    help: 'SKU changes applied by catalog syncs, by kind (created, price, stock, sku_id, listing, other).',
    labelNames: ['kind', 'supplier'] as const,
    registers: [this.registry],
  });
  readonly syncProductsSkipped = new Counter({
    name: 'relay_sync_products_skipped_total',
    help: 'Products of a sync listing left out because their shape is wrong (the rest of their page is stored).',
    labelNames: ['supplier'] as const,
    registers: [this.registry],
  });
  readonly syncRereads = new Counter({
    name: 'relay_sync_rereads_total',
    help: 'Ordered products an incremental sync re-read on their own (GET /products/{id}), by outcome (ok, gone, failed).',
    labelNames: ['outcome', 'supplier'] as const,
    registers: [this.registry],
  });

  // Orders
  readonly ordersByStatus = new Gauge({
    name: 'relay_orders',
    help: 'Local orders by status.',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  readonly placements = new Counter({
    name: 'relay_order_placements_total',
    help: 'Order placement attempts by outcome (accepted, rejected, unavailable, unknown, deduplicated).',
    labelNames: ['outcome', 'supplier'] as const,
    registers: [this.registry],
  });
  readonly timeToDelivery = new Histogram({
    name: 'relay_order_time_to_delivery_seconds',
    help: 'Time from order creation to delivered items.',
    buckets: [1, 5, 15, 30, 60, 300, 900, 3600, 21600, 86400],
    labelNames: ['supplier'] as const,
    registers: [this.registry],
  });
  readonly overcharges = new Counter({
    name: 'relay_order_overcharge_total',
    help: 'Orders the upstream charged above quantity × the checked unit price.',
    labelNames: ['supplier'] as const,
    registers: [this.registry],
  });
  readonly itemsRequeued = new Counter({
    name: 'relay_order_items_requeued_total',
    help: 'Orders found in a delivered state without their items (at start) and put back on the poller to read them.',
    registers: [this.registry],
  });
  readonly stateRegressions = new Counter({
    name: 'relay_order_state_regressions_total',
    help: 'Status reports ignored because they would move an order back.',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });
  readonly stateAnomalies = new Counter({
    name: 'relay_order_state_anomalies_total',
    help: 'Contradictory status reports kept as anomalies (e.g. canceled after delivery).',
    registers: [this.registry],
  });
  readonly reconciliationDifferences = new Counter({
    name: 'relay_reconciliation_differences_total',
    help:
      "Differences between a finished order and the upstream's read found by reconciliation, by field (status, " +
      'amount, refunded_amount).',
    labelNames: ['field', 'supplier'] as const,
    registers: [this.registry],
  });
  readonly stuckOrders = new Gauge({
    name: 'relay_orders_stuck',
    help: 'Unfinished orders without progress for STUCK_ORDER_ALERT_S, and submit_unknown older than 10 minutes.',
    registers: [this.registry],
  });

  readonly reconcileBacklog = new Gauge({
    name: 'relay_reconcile_backlog',
    help: "Finished orders whose scheduled reconciliation read is due and not made yet, by the order's supplier (read on scrape).",
    labelNames: ['supplier'] as const,
    registers: [this.registry],
  });
  readonly reconcileBacklogAge = new Gauge({
    name: 'relay_reconcile_backlog_age_seconds',
    help: 'How long the oldest due reconciliation read has been due, by supplier (0 without a backlog; read on scrape).',
    labelNames: ['supplier'] as const,
    registers: [this.registry],
  });

  // Callbacks
  readonly callbacksReceived = new Counter({
    name: 'relay_callbacks_received_total',
    help: 'Verified upstream callbacks received.',
    labelNames: ['event', 'supplier'] as const,
    registers: [this.registry],
  });
  readonly callbacksRejected = new Counter({
    name: 'relay_callbacks_rejected_total',
    help: 'Upstream callbacks refused, by reason.',
    labelNames: ['reason', 'supplier'] as const,
    registers: [this.registry],
  });
  readonly callbackDuplicates = new Counter({
    name: 'relay_callbacks_duplicate_total',
    help: 'Verified callbacks already in the inbox.',
    labelNames: ['supplier'] as const,
    registers: [this.registry],
  });

  // Wallet
  readonly walletBalance = new Gauge({
    name: 'relay_wallet_balance',
    help: "A supplier's upstream wallet balance at its last ping.",
    labelNames: ['currency', 'supplier'] as const,
    registers: [this.registry],
  });

  readonly upstreamUp = new Gauge({
    name: 'relay_upstream_up',
    help: "Whether a supplier's last ping reached it with our credentials accepted (1) or not (0: down or auth_failed).",
    labelNames: ['supplier'] as const,
    registers: [this.registry],
  });

  // Outbox
  readonly outboxBacklog = new Gauge({
    name: 'relay_outbox_backlog',
    help: 'Shop notifications waiting for delivery.',
    registers: [this.registry],
  });
  readonly outboxDead = new Gauge({
    name: 'relay_outbox_dead',
    help: 'Shop notifications given up after SHOP_WEBHOOK_MAX_ATTEMPTS, waiting for an operator (list, replay).',
    registers: [this.registry],
  });
  readonly outboxDeliveries = new Counter({
    name: 'relay_outbox_deliveries_total',
    help: 'Shop notification delivery attempts by result (delivered, failed, dead).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  // Alerts
  readonly alerts = new Counter({
    name: 'relay_alerts_total',
    help: 'Alerts raised, by kind (wallet_low, order_stuck, sync_failed, upstream_auth_failed).',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  // Retention (src/retention): its tables' series start at 0 (RetentionService)
  readonly retentionDeletedRows = new Counter({
    name: 'relay_retention_deleted_rows_total',
    help: 'Rows deleted by the retention job, by table.',
    labelNames: ['table'] as const,
    registers: [this.registry],
  });

  /** Refreshes of gauges read from the database, run when the metrics are scraped (not on a timer). */
  private readonly scrapeHooks: Array<() => Promise<void>> = [];
  /** The refresh in flight: scrapes that come while it runs share it. */
  private refreshing: Promise<Error[]> | null = null;

  constructor() {
    // relay_process_cpu_seconds_total, relay_nodejs_heap_size_used_bytes, …
    collectDefaultMetrics({ register: this.registry, prefix: 'relay_' });
  }

  /**
   * Registers a refresh to run before each scrape: a gauge whose query reads a whole table (e.g.
   * orders by status) costs the database once a scrape, not every second on every replica.
   */
  onScrape(hook: () => Promise<void>): void {
    this.scrapeHooks.push(hook);
  }

  /**
   * Runs the scrape refreshes, once however many scrapes come at the same time; the errors of those
   * that failed (their gauges keep their last values).
   */
  beforeScrape(): Promise<Error[]> {
    this.refreshing ??= Promise.allSettled(this.scrapeHooks.map((hook) => Promise.resolve().then(hook)))
      .then((results) =>
        results.flatMap((r) => (r.status === 'rejected' ? [r.reason instanceof Error ? r.reason : new Error(String(r.reason))] : [])),
      )
      .finally(() => {
        this.refreshing = null;
      });
    return this.refreshing;
  }
}
