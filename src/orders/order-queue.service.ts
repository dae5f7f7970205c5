/**
 * The queue of orders waiting for the upstream's request budget (`queued`: accepted, nothing sent).
 * There is one queue head per supplier (CONTRACT §10): each supplier's queued orders are taken up by
 * a loop of their own, so that a supplier whose key is blocked or whose server does not answer never
 * holds back another supplier's queued orders (no shared head, lock or timer).
 * Each instance with background work takes a supplier's orders up in arrival order (the order their
 * attempts were reserved), one at a time, through `QueuedOrderSender.placeQueued`: the price guard's
 * read waits for the supplier's budget as long as it takes, the create then for its token, and only
 * then is the order sent. An order that cannot be tried now (its product could not be read, or a 429
 * sent it back) stays at the head: that supplier's loop waits a tick before it tries again. Replicas
 * share the queue; the row lock of the attempt decides which one sends an order (another one, having
 * read the same head, finds it no longer queued and goes on).
 * With a supplier's budget off, its orders are queued only by a 429: its loop then runs when woken
 * (an order was queued), at start, and at an idle pace of IDLE_MS (orders another replica queued),
 * and a tick after a pass that stopped at an order (its next try waits for the block's end in the
 * budget service). A loop is started for every supplier the registry knows, at start and whenever a
 * pass or a wake finds one without.
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { WakeLoop } from '../common/wake-loop.js';
import { AppConfig } from '../config/app-config.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { DomainEvents } from './domain-events.js';
import { QueuedOrderSender } from './queued-order-sender.service.js';
import { OrderReads } from './order-reads.repository.js';

/** Queued orders read at once from a supplier's head. */
const HEAD = 10;
/** The pace of a supplier's queue when nothing wakes it. */
const TICK_MS = 1000;
/** With a supplier's budget off: the pace of its empty queue when nothing wakes it. */
const IDLE_MS = 60_000;

@Injectable()
export class OrderQueue implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('order-queue');
  /** Each supplier's loop (its passes: after one, the next at once when woken and the head could move, else a tick later). */
  private readonly loops = new Map<string, WakeLoop<boolean>>();
  private unsubscribe: (() => void) | null = null;
  private running = false;
  /** Aborted at shutdown: ends a price read waiting for the budget. */
  private readonly shutdown = new AbortController();

  constructor(
    private readonly config: AppConfig,
    private readonly sender: QueuedOrderSender,
    private readonly reads: OrderReads,
    private readonly events: DomainEvents,
    private readonly suppliers: SupplierRegistry,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workers) return;
    this.running = true;
    this.unsubscribe = this.events.subscribe('order_queued', this.takeUpQueuedOrders.bind(this));
    this.ensureLoops();
  }

  async onModuleDestroy(): Promise<void> {
    this.running = false;
    const passesEnded = [...this.loops.values()].map((loop) => loop.stop());
    this.unsubscribe?.();
    this.shutdown.abort();
    await Promise.all(passesEnded);
  }

  /** Takes the queues up soon (an order was queued). */
  wake(): void {
    this.ensureLoops();
    for (const loop of this.loops.values()) loop.wake();
  }

  /** `order_queued`: an order was queued in this process, the queues take it up soon. */
  private takeUpQueuedOrders(): void {
    this.wake();
  }

  /** A loop for every supplier the registry knows (one added at run time gets one at the next pass or wake). */
  private ensureLoops(): void {
    if (!this.running) return;
    for (const { config } of this.suppliers.list()) {
      const name = config.name;
      if (this.loops.has(name)) continue;
      const loop: WakeLoop<boolean> = new WakeLoop(
        () => this.drainSupplier(name, loop),
        (blocked, woken) => (woken && !blocked ? 0 : blocked || this.suppliers.find(name)?.config.settings.rateLimit ? TICK_MS : IDLE_MS),
      );
      this.loops.set(name, loop);
      loop.start();
    }
  }

  /**
   * Sends every supplier's queued orders, each supplier's beside the others'. True when one stopped at
   * an order it cannot try now. Public for tests; errors are logged.
   */
  async drain(): Promise<boolean> {
    const stopped = await Promise.all(this.suppliers.list().map((s) => this.drainSupplier(s.config.name)));
    return stopped.some(Boolean);
  }

  /**
   * Sends `supplier`'s queued orders from its head until none is left or one cannot be tried now. True
   * when it stopped at such an order (the next try waits a tick).
   */
  private async drainSupplier(supplier: string, loop?: WakeLoop<boolean>): Promise<boolean> {
    this.ensureLoops();
    const stopped = () => (loop ? loop.stopped : !this.running && this.shutdown.signal.aborted);
    // each queued attempt is tried once a pass: one still at the head after its try (a row the queue
    // cannot move) waits for the next tick instead of being read again at once
    const tried = new Set<string>();
    try {
      while (!stopped()) {
        const head = (await this.reads.queuedHead(HEAD, supplier)).filter((q) => !tried.has(`${q.orderId}:${q.attemptNo}`));
        if (head.length === 0) return false;
        for (const q of head) {
          if (stopped()) return false;
          tried.add(`${q.orderId}:${q.attemptNo}`);
          if (!(await this.sender.placeQueued(q.orderId, q.attemptNo, { signal: this.shutdown.signal }))) return true;
        }
      }
    } catch (e) {
      if (!stopped()) this.logger.error({ msg: `the order queue of supplier ${supplier} failed: ${(e as Error).message}`, supplier });
      return true;
    }
    return false;
  }
}
