/**
 * Carries out what `planCallbacks` (callback-plan.ts, pure) decides for verified callbacks
 * (CONTRACT §6, CALLBACK_TRUST):
 * - on receipt (`receive`), under `verified`: the callback is stored in the inbox and, when its plan
 *   is `apply` (a delivering state with its fulfillment; `pending_payment`, `paid`, `fulfilling`,
 *   `canceled`), applied in the same transaction on the locked order, its inbox row finished with it:
 *   no read, one commit. The order's next poll moves later (callbacks are flowing). Anything else is
 *   left pending for the drain below. The fulfillment is never stored in the inbox: a delivering claim
 *   that the drain takes up (it waited for an attempt in flight or a cancel) is read.
 * - the drain works through the pending callbacks, one group per upstream order and number, one step
 *   after the other as `planStep` and `nextStep` say (callback-plan.ts): each step one call here:
 *   - `store` `unknown_order`: recorded, never applied;
 *   - `check_untracked`: never applied; an upstream order that its order does not follow (its
 *     attempt closed here, or another upstream order followed) is kept as an anomaly on the order when
 *     the upstream's read confirms it (stored as `unknown_order` with an `anomaly …` outcome);
 *   - `store` `other_attempt`: a callback naming an earlier attempt of the order it follows is `ignored`;
 *   - `wait` (an attempt still in flight or a cancel in progress): the callback waits in the inbox and
 *     is taken up as soon as the order is settled (the domain event `order_settled`) or at its next
 *     retry, none of which counts as a try of its read;
 *   - `resolve` (the order's attempt is `submit_unknown`): settled at once through the callback's
 *     `downstream_order_no` (the upstream order read must be that attempt's), whatever status it
 *     claims; the read is in the budget's `deliver` class (it can hand items to the shop);
 *   - `apply`: as on receipt;
 *   - `read` (a delivering state without its fulfillment, a refund state, an unknown status; every
 *     claim but an early one under `confirm`): the order is read at once, in the `deliver` class for a
 *     delivering claim, and the upstream's answer applied;
 *   - `hint` (`confirm`, a claim of `pending_payment`, `paid`, `fulfilling`): no read. For an order the
 *     poller follows, its next poll is brought to ORDER_POLL_BASE_MS from now at the latest (outcome
 *     `poll_sooner …`); an order already at or past the claimed state here is left as it is (`late …`);
 *     an order nothing follows is read as for any other claim (the callback may be its only news);
 *   - a failed read: the order is left to the poller (made due now; the domain event `order_read_due`
 *     wakes it); one that no poll would make (a submit_unknown attempt, an upstream order not
 *     followed) is tried again, MAX_RESOLVE_TRIES at most.
 *
 * One read for callbacks that arrive close together: the callbacks of one order claimed in one batch
 * are read once; and a confirming read of an order made here (or the read settling its unknown
 * attempt) stands for that order's callbacks received before it ended or within SHARE_MS after (the
 * callback's `received_at` against the read's end, so that how long the callback then waited in the
 * inbox does not matter), when its applied state already shows every claim of theirs: the same status,
 * or a later one that the claim does not contradict, with the items of a delivered state stored (a
 * partial state is never shown by an earlier read of it: it may come again with more items or a larger
 * refund). Such callbacks are `applied` from it (outcome `… (shared read)`) without a read of their own;
 * anything else, a failed read's callbacks included, is read again. The rule is this instance's:
 * another replica reads for the callbacks it takes.
 *
 * Shutdown ends the reads in flight and gives their callbacks back to the inbox as they were, for the
 * next start or another replica.
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { backoffMs } from '../common/backoff.js';
import { Clock } from '../common/clock.js';
import { LoopProgress, type LoopProgressView } from '../common/loop-progress.js';
import { WakeLoop } from '../common/wake-loop.js';
import { AppConfig } from '../config/app-config.js';
import { DomainEvents, type OrderSettled } from '../orders/domain-events.js';
import { OrderFollowService, type RefreshResult, type ResolveResult } from '../orders/order-follow.service.js';
import type { AttemptRecord, OrderRecord } from '../orders/order.records.js';
import { OrderReads } from '../orders/order-reads.repository.js';
import { OrderWrites } from '../orders/order-writes.repository.js';
import { ITEMS_DELIVERED, isUpstreamStatus } from '../orders/order-state.js';
import type { OrderTx } from '../orders/order-tx.js';
import { OrderUpdater } from '../orders/order-updater.service.js';
import { CallbackInboxRepository, type CallbackSummary, type InboxRow, type StoredRow } from './callback-inbox.repository.js';
import {
  nextStep,
  planCallbacks,
  planStep,
  readShows,
  type CallbackClaim,
  type CallbackOrderFacts,
  type CallbackPlan,
  type ClaimGroup,
  type ClaimOrder,
  type DrainStep,
  type DrainWork,
  type InboxRecord,
  type WorkDone,
} from './callback-plan.js';
import { runLimited } from '../orders/run-limited.js';
import type { UpstreamCallOptions } from '../upstream/upstream.client.js';
import type { UpstreamFulfillment, UpstreamOrder } from '../upstream/upstream.types.js';

/** `rows` by `key`, each group in the rows' order. */
function groupBy<K>(rows: readonly InboxRow[], key: (row: InboxRow) => K): Map<K, InboxRow[]> {
  const groups = new Map<K, InboxRow[]>();
  for (const row of rows) {
    const k = key(row);
    const group = groups.get(k);
    if (group) group.push(row);
    else groups.set(k, [row]);
  }
  return groups;
}

/** What the callbacks' claims are, as the inbox keeps them: no order number from the upstream, no fulfillment. */
function claimsOf(rows: readonly InboxRow[]): CallbackClaim[] {
  return rows.map((row) => ({
    upstreamOrderId: row.upstreamOrderId,
    upstreamOrderNo: null,
    downstreamOrderNo: row.downstreamOrderNo,
    status: row.status,
    fulfillment: null,
  }));
}

/** The order the callbacks name, and the attempt their number names. */
type FoundOrder = NonNullable<Awaited<ReturnType<OrderReads['findOrderNamed']>>>;

/** The attempt a plan's resolve or untracked check is for: the one the callbacks' number names. */
function named(found: FoundOrder): AttemptRecord {
  if (!found.attempt) throw new Error(`the callbacks for order ${found.order.shopOrderNo} name no attempt`);
  return found.attempt;
}

const BATCH = 24;
const CONCURRENCY = 8;
/** Upstream reads one group of callbacks may make one after the other (settling an unknown attempt, then the order's state). */
const READS_PER_GROUP = 2;
/** How long after a confirming read ended a callback received may still be answered by it. */
const SHARE_MS = 1000;
/** How long an ended read is kept for callbacks received before its end that are claimed later. */
const KEEP_READS_MS = 60_000;

/** The budget class of a group's confirming read: `deliver` when one of its callbacks claims a delivering state. */
function readOptions(group: readonly InboxRow[]): UpstreamCallOptions {
  return group.some((row) => isUpstreamStatus(row.status) && ITEMS_DELIVERED.has(row.status)) ? { priority: 'deliver' } : {};
}

/** A confirming read of one order made here: in flight while `doneAt` is null. */
interface ConfirmingRead {
  result: Promise<RefreshResult>;
  doneAt: number | null;
}

@Injectable()
export class CallbackProcessor implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('callbacks');
  /**
   * The inbox's drains (WakeLoop): one at a time, the next at once when kick() came during one, else
   * after retryMs (deferred callbacks, callbacks a stopped process had claimed).
   */
  private readonly loop = new WakeLoop<void>(
    () => this.drainCount.run(() => this.drain()),
    (_, kicked) => (kicked ? 0 : this.retryMs),
  );
  private stopped = false;
  private unsubscribe: (() => void) | null = null;
  /** Orders whose callbacks this instance left waiting for an attempt or a cancel. */
  private readonly deferred = new Set<string>();
  /** Aborted at shutdown: ends the upstream reads in flight. */
  private readonly shutdown = new AbortController();
  /**
   * The latest confirming read of each order, in flight or ended within KEEP_READS_MS: shared by the
   * order's callbacks (see the file's header).
   */
  private readonly reads = new Map<string, ConfirmingRead>();
  private readonly drainCount = new LoopProgress();

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly inbox: CallbackInboxRepository,
    private readonly orderReads: OrderReads,
    private readonly orderWrites: OrderWrites,
    private readonly follow: OrderFollowService,
    private readonly updater: OrderUpdater,
    private readonly events: DomainEvents,
  ) {
    this.unsubscribe = events.subscribe('order_settled', this.releaseWaitingCallbacks.bind(this));
  }

  /**
   * `order_settled`: the callbacks this instance left waiting for the order's attempt or cancel are
   * due at once and the inbox is drained; those another replica left wait for its next retry.
   */
  private releaseWaitingCallbacks({ orderId }: OrderSettled): void {
    if (!this.deferred.delete(orderId)) return;
    void this.inbox
      .release(orderId, this.clock.now())
      .then((n) => {
        if (n > 0) this.kick();
      })
      .catch(() => undefined);
  }

  /** Drains of the inbox begun and ended since the start: for tests and tools (see LoopProgress). */
  get drains(): LoopProgressView {
    return this.drainCount;
  }

  /** Retry interval of the inbox (deferred callbacks, crashed processors). */
  get retryMs(): number {
    return Math.max(20, Math.min(this.config.orders.pollBaseMs, 1000));
  }

  onApplicationBootstrap(): void {
    this.loop.start(this.retryMs);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    this.shutdown.abort();
    this.unsubscribe?.();
    await this.loop.stop();
  }

  /** Processes the inbox soon (a callback was just stored). */
  kick(): void {
    if (this.stopped) return;
    this.loop.wake();
  }

  private async drain(): Promise<void> {
    try {
      for (let round = 0; round < 100 && !this.stopped; round++) {
        const now = this.clock.now();
        // Groups are processed CONCURRENCY at a time, each with its reads: the lease covers every wave,
        // so that another replica does not take a claimed callback before its turn comes.
        const leaseMs = Math.ceil(BATCH / CONCURRENCY) * READS_PER_GROUP * (this.config.upstream.timeoutMs + 1000);
        const claimed = await this.inbox.claim(now, new Date(now.getTime() + leaseMs), BATCH);
        if (claimed.length === 0) return;
        await runLimited([...groupBy(claimed, (row) => `${row.supplier}:${row.upstreamOrderId}`).values()], CONCURRENCY, (g) =>
          this.process(g).catch((e: unknown) =>
            this.logger.error({ msg: `callback processing failed: ${(e as Error).message}`, upstream_order_id: g[0].upstreamOrderId }),
          ),
        );
        if (claimed.length < BATCH) return;
      }
    } catch (e) {
      if (!this.stopped) this.logger.error({ msg: `callback inbox drain failed: ${(e as Error).message}` });
    }
  }

  /**
   * The callbacks of one upstream order, one after the other by the `downstream_order_no` they carry:
   * each number is judged on its own (a callback naming this upstream order with another order's
   * number must not be settled as that order's, whichever was stored first).
   */
  private async process(group: InboxRow[]): Promise<void> {
    for (const rows of groupBy(group, (row) => row.downstreamOrderNo).values()) await this.processClaim(rows);
  }

  /**
   * Stores a verified, usable callback and, under CALLBACK_TRUST=verified, applies it in the same
   * transaction when its plan is `apply` (the order locked, the report applied, the inbox row finished
   * with it: one commit). Any other plan (or a failure to apply) leaves it pending for the drain, which
   * is kicked. A duplicate is only counted. Throws only when it could not be stored (a 5xx, so that the
   * upstream tries again).
   */
  async receive(c: CallbackSummary, fulfillment: UpstreamFulfillment | null): Promise<{ id: string; duplicate: boolean }> {
    const now = this.clock.now();
    if (this.config.callbacks.trust === 'verified') {
      try {
        const r = await this.orderWrites.pipelinedTransaction(async (tx) => {
          // the inbox row and the order's lock in one statement (the lock is harmless for a duplicate)
          const { first, found } = await tx.writeAndLockOrderNamed<StoredRow>(
            this.inbox.storeWrite(c, now),
            c.supplier,
            c.downstreamOrderNo,
            c.upstreamOrderId,
          );
          const stored = this.inbox.stored(first!);
          if (stored.duplicate) return { stored, applied: true };
          const claim: CallbackClaim = { ...c, fulfillment };
          const applied = await this.applyFound(tx, found, [stored.id], [claim]);
          return { stored, applied: applied.kind === 'applied' };
        });
        if (!r.applied) this.kick();
        return r.stored;
      } catch (e) {
        this.logger.error({
          msg: `callback could not be applied on receipt (${(e as Error).message}); stored for the inbox's processing`,
          upstream_order_id: c.upstreamOrderId,
        });
      }
    }
    const stored = await this.inbox.store(c, now);
    if (!stored.duplicate) this.kick();
    return stored;
  }

  /**
   * In `tx`: locks the order the callbacks name and, when their plan on the locked row is `apply`,
   * applies their reports and finishes their inbox rows `ids` with the same commit. Else writes
   * nothing and answers the plan.
   */
  private async applyLocked(
    tx: OrderTx,
    ids: string[],
    named: { supplier: string; number: string | null; upstreamOrderId: number },
    claims: CallbackClaim[],
  ): Promise<{ kind: 'applied'; order: OrderRecord } | { kind: 'planned'; plan: CallbackPlan }> {
    return this.applyFound(tx, await tx.lockOrderNamed(named.supplier, named.number, named.upstreamOrderId), ids, claims);
  }

  /**
   * `applyLocked` once the order is locked (`found`; null: none). The inbox rows' finish goes in the
   * statement of the last report's order update (its status as that update leaves it).
   */
  private async applyFound(
    tx: OrderTx,
    found: Awaited<ReturnType<OrderTx['lockOrderNamed']>>,
    ids: string[],
    claims: CallbackClaim[],
  ): Promise<{ kind: 'applied'; order: OrderRecord } | { kind: 'planned'; plan: CallbackPlan }> {
    const plan = planCallbacks(claims, found ? this.facts(found.order, found.named) : null, this.config.callbacks.trust);
    if (!found || plan.kind !== 'apply') return { kind: 'planned', plan };
    let order = found.order;
    const claimed = [...new Set(claims.map((c) => c.status))].join(', ');
    const finish = (status: string) =>
      this.inbox.finishWrite(ids, 'applied', `verified ${claimed}: order ${status}`, found.order.id, this.clock.now());
    let finished = false;
    for (const [i, report] of plan.reports.entries()) {
      const last = i === plan.reports.length - 1;
      const withWrite = last
        ? (to: string) => {
            finished = true;
            return finish(to);
          }
        : undefined;
      order = (await this.updater.applyReport(tx, order, report, 'callback', { schedule: 'callback', kind: 'read', withWrite })).order;
    }
    if (!finished) {
      const w = finish(order.status);
      await tx.write(w.sql, w.params);
    }
    return { kind: 'applied', order };
  }

  /** What planCallback weighs of an order and the attempt a callback names. */
  private facts(order: OrderRecord, named: { attemptNo: number; status: AttemptRecord['status'] } | null): CallbackOrderFacts {
    return {
      status: order.status,
      upstreamOrderId: order.upstreamOrderId,
      attempt: order.attempt,
      operationInProgress: order.opToken !== null && order.opUntil !== null && order.opUntil > this.clock.now(),
      named: named && { attemptNo: named.attemptNo, status: named.status },
    };
  }

  /**
   * Callbacks of one upstream order that carry the same `downstream_order_no` (or none), as their plan
   * says (callback-plan.ts: `planCallbacks`, then `planStep` and `nextStep`). The inbox keeps no
   * fulfillment: a delivering claim taken up here (it waited, or could not be applied on receipt) is
   * read. An order settled while it was looked at (e.g. by an operator) is looked at once more.
   */
  private async processClaim(rows: InboxRow[]): Promise<void> {
    const first = await this.look(rows, false);
    if (first.kind === 'again') await this.look(rows, true, first.answer);
  }

  /**
   * One look at the order the callbacks name: their plan carried out, one step after the other, until
   * the inbox records them or the plan says to look `again`. `answer`: the upstream order as an
   * earlier look read it.
   */
  private async look(rows: InboxRow[], lastPass: boolean, answer?: UpstreamOrder): Promise<DrainStep> {
    const { supplier, upstreamOrderId, downstreamOrderNo: number } = rows[0];
    // only an order of the supplier whose URL the callbacks reached
    const found = await this.orderReads.findOrderNamed(supplier, upstreamOrderId, number);
    const group: ClaimGroup = {
      upstreamOrderId,
      number,
      claimed: [...new Set(rows.map((r) => r.status))],
      tries: Math.max(...rows.map((r) => r.tries)),
    };
    const order: ClaimOrder | null = found && {
      shopOrderNo: found.order.shopOrderNo,
      status: found.order.status,
      attempt: found.order.attempt,
      opUntil: found.order.opUntil,
    };
    const plan = planCallbacks(claimsOf(rows), found && this.facts(found.order, found.attempt), this.config.callbacks.trust);
    let step = planStep(plan, group, order);
    while (step.kind === 'do' && found && order) {
      const done = await this.work(step.work, rows, found, answer);
      step = nextStep(done, group, order, { lastPass, aborted: this.shutdown.signal.aborted });
    }
    if (step.kind === 'record') await this.record(rows, found?.order ?? null, step.record);
    return step;
  }

  /** One piece of a plan's work (callback-plan.ts DrainWork), and what came of it. */
  private async work(work: DrainWork, rows: InboxRow[], found: FoundOrder, answer: UpstreamOrder | undefined): Promise<WorkDone> {
    const { supplier, upstreamOrderId, downstreamOrderNo: number } = rows[0];
    const { order } = found;
    switch (work.kind) {
      case 'apply': {
        const ids = rows.map((r) => r.id);
        const claims = claimsOf(rows);
        return {
          work: 'apply',
          result: await this.orderWrites.transaction((tx) => this.applyLocked(tx, ids, { supplier, number, upstreamOrderId }, claims)),
        };
      }
      case 'resolve': {
        const attempt = named(found);
        return { work: 'resolve', attempt, result: await this.resolve(order.id, supplier, attempt, upstreamOrderId) };
      }
      case 'check_untracked': {
        const attempt = named(found);
        const signal = this.shutdown.signal;
        return {
          work: 'check_untracked',
          attempt,
          result: await this.follow.checkUntracked(supplier, order.id, attempt, upstreamOrderId, 'callback', signal, answer),
        };
      }
      case 'poll_sooner':
        return {
          work: 'poll_sooner',
          next: await this.inbox.pollSooner(order.id, new Date(this.clock.nowMs() + this.config.orders.pollBaseMs)),
        };
      case 'confirm':
        return { work: 'confirm', ...(await this.confirm(order.id, rows)) };
    }
  }

  /**
   * What the inbox records for the callbacks (callback-plan.ts InboxRecord); `order`: the order they
   * name (null: none).
   */
  private async record(rows: InboxRow[], order: OrderRecord | null, r: InboxRecord): Promise<void> {
    const ids = rows.map((row) => row.id);
    const orderId = order?.id ?? null;
    const now = this.clock.now();
    switch (r.kind) {
      case 'finish': {
        await this.inbox.finish(ids, r.state, r.outcome, orderId, now);
        const fields = order ? { shop_order_no: order.shopOrderNo, trace_id: order.traceId } : {};
        if (r.warn) this.logger.warn({ msg: r.warn, ...fields, upstream_order_id: rows[0].upstreamOrderId });
        return;
      }
      case 'wait':
        return this.defer(ids, orderId, r.until === 'retry' ? new Date(now.getTime() + this.retryMs) : r.until, r.outcome);
      case 'retry_read': {
        const backoff = backoffMs(r.tries, { baseMs: this.config.orders.pollBaseMs, maxMs: this.config.orders.pollMaxMs });
        return this.inbox.defer(ids, orderId, new Date(now.getTime() + backoff), r.outcome, r.tries);
      }
      case 'read_due':
        await this.inbox.finish(ids, 'read_failed', r.outcome, orderId, now);
        // the read made the order due now (OrderFollowService.refresh): the poller reads it soon
        if (orderId) this.events.publish({ type: 'order_read_due', orderId, why: 'callback_read_failed' });
        return;
      case 'give_back':
        return this.inbox.giveBack(ids, now);
    }
  }

  /**
   * The read that settles the order's `submit_unknown` attempt, in the `deliver` class whatever the
   * callbacks claim (it can hand items to the shop); once resolved, it stands as the order's latest
   * confirming read.
   */
  private async resolve(orderId: string, supplier: string, attempt: AttemptRecord, upstreamOrderId: number): Promise<ResolveResult> {
    const r = await this.follow.resolveUnknown(supplier, attempt, upstreamOrderId, 'callback', this.shutdown.signal, {
      priority: 'deliver',
    });
    if (r.kind === 'resolved') this.remember(orderId, Promise.resolve({ kind: 'applied', order: r.order })).doneAt = this.clock.nowMs();
    return r;
  }

  /**
   * The confirming read of the group's order: the order's latest read (`shared`) when every callback of
   * the group was received before it ended or within SHARE_MS after, and its applied state shows every
   * claim of the group; else a read of its own, in the `deliver` class where a claim is a delivering
   * state, which the order's next callbacks may share.
   */
  private async confirm(orderId: string, group: InboxRow[]): Promise<{ result: RefreshResult; shared: boolean }> {
    const recent = this.reads.get(orderId);
    const received = Math.max(...group.map((row) => row.receivedAt.getTime()));
    if (recent && (recent.doneAt === null || received <= recent.doneAt + SHARE_MS)) {
      const result = await recent.result;
      if (result.kind === 'applied' && group.every((row) => readShows(result.order, row.status))) return { result, shared: true };
    }
    const read = this.remember(orderId, this.follow.refresh(orderId, 'callback', this.shutdown.signal, readOptions(group)));
    try {
      return { result: await read.result, shared: false };
    } finally {
      read.doneAt = this.clock.nowMs();
    }
  }

  /**
   * Keeps `result` as the order's latest confirming read (in flight until its `doneAt` is set); forgets
   * reads ended more than KEEP_READS_MS ago.
   */
  private remember(orderId: string, result: Promise<RefreshResult>): ConfirmingRead {
    const nowMs = this.clock.nowMs();
    for (const [id, read] of this.reads) if (read.doneAt !== null && nowMs - read.doneAt > KEEP_READS_MS) this.reads.delete(id);
    const read: ConfirmingRead = { result, doneAt: null };
    this.reads.set(orderId, read);
    return read;
  }

  private async defer(ids: string[], orderId: string | null, at: Date, outcome: string): Promise<void> {
    if (orderId) this.deferred.add(orderId);
    await this.inbox.defer(ids, orderId, at, outcome);
  }
}
