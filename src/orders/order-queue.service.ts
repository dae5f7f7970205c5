/**
 * The queue of orders waiting for the upstream's request budget (`queued`: accepted, nothing sent).
 * Each instance with background work takes them up in arrival order (the order their attempts were
 * reserved), one at a time, through `OrderRelayService.placeQueued`: the price guard's read waits for
 * the budget as long as it takes, the create then for its token, and only then is the order sent. An
 * order that cannot be tried now (its product could not be read, or a 429 sent it back) stays at the
 * head: the queue waits a tick before it tries again. Replicas share the queue; the row lock of the attempt decides which one
 * sends an order (another one, having read the same head, finds it no longer queued and goes on).
 * With the budget off, orders are queued only by a 429: the queue then runs when woken (an order was
 * queued here: the domain event `order_queued`), at start, and at an idle pace of IDLE_MS (orders
 * another replica queued), and a tick after a pass that stopped at an order (its next try waits for
 * the block's end in the budget service).
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { WakeLoop } from '../common/wake-loop.js';
import { AppConfig } from '../config/app-config.js';
import { DomainEvents } from './domain-events.js';
import { OrderRelayService } from './order-relay.service.js';
import { OrderRepository } from './order.repository.js';

/** Queued orders read at once from the head. */
const HEAD = 10;
/** The pace of the queue when nothing wakes it. */
const TICK_MS = 1000;
/** With the budget off: the pace of an empty queue when nothing wakes it. */
const IDLE_MS = 60_000;

@Injectable()
export class OrderQueue implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('order-queue');
  /** The passes: after one, the next at once when an order was queued meanwhile and the head could move, else a tick later. */
  private readonly loop = new WakeLoop(
    () => this.drain(),
    (blocked, woken) => (woken && !blocked ? 0 : blocked || this.config.budget.rateLimit !== null ? TICK_MS : IDLE_MS),
  );
  private unsubscribe: (() => void) | null = null;
  /** Aborted at shutdown: ends a price read waiting for the budget. */
  private readonly shutdown = new AbortController();

  constructor(
    private readonly config: AppConfig,
    private readonly relay: OrderRelayService,
    private readonly repo: OrderRepository,
    private readonly events: DomainEvents,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workers) return;
    this.unsubscribe = this.events.subscribe('order_queued', this.takeUpQueuedOrders.bind(this));
    this.loop.start();
  }

  async onModuleDestroy(): Promise<void> {
    const passEnded = this.loop.stop();
    this.unsubscribe?.();
    this.shutdown.abort();
    await passEnded;
  }

  /** Takes the queue up soon (an order was queued). */
  wake(): void {
    this.loop.wake();
  }

  /** `order_queued`: an order was queued in this process, the queue takes it up soon. */
  private takeUpQueuedOrders(): void {
    this.wake();
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  /**
   * Sends queued orders from the head until none is left or one cannot be tried now. True when it
   * stopped at such an order (the next try waits a tick). Public for tests; errors are logged.
   */
  async drain(): Promise<boolean> {
    // each queued attempt is tried once a pass: one still at the head after its try (a row the queue
    // cannot move) waits for the next tick instead of being read again at once
    const tried = new Set<string>();
    try {
      while (!this.stopped) {
        const head = (await this.repo.queuedHead(HEAD)).filter((q) => !tried.has(`${q.orderId}:${q.attemptNo}`));
        if (head.length === 0) return false;
        for (const q of head) {
          if (this.stopped) return false;
          tried.add(`${q.orderId}:${q.attemptNo}`);
          if (!(await this.relay.placeQueued(q.orderId, q.attemptNo, this.shutdown.signal))) return true;
        }
      }
    } catch (e) {
      if (!this.stopped) this.logger.error({ msg: `the order queue failed: ${(e as Error).message}` });
      return true;
    }
    return false;
  }
}
