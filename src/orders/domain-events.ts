/**
 * The domain events of an order's flow, and the one bus (`DomainEvents`) that carries them in this
 * process. An event says what happened to an order; the services that wait for it subscribe a handler
 * named by what it does. The bus is how a service hands news to one that depends on it, without
 * depending on it in turn (a call back would make a cycle of services). Who publishes and who handles
 * each event: docs/architecture.md, "Domain events" (checked against the code by
 * test/architecture-rules.spec.ts).
 *
 * Delivery is synchronous, in the order the handlers subscribed, and in this process only: an event
 * makes work happen sooner, never the only way it happens (each handler's work also runs on its own
 * timer, and another replica sees the rows, not the events). A handler that throws is reported to
 * `onError`; the publisher and the other handlers go on.
 */

/** The order has no attempt in flight and no cancel or operator action in progress any more. */
export interface OrderSettled {
  readonly type: 'order_settled';
  readonly orderId: string;
}

/** The order was queued for the request budget (accepted, nothing sent). */
export interface OrderQueued {
  readonly type: 'order_queued';
  readonly orderId: string;
}

/**
 * The order is due for a read now: a delivered state was reported without its items (`items_due`),
 * or a callback's confirming read failed and the order was made due (`callback_read_failed`).
 */
export interface OrderReadDue {
  readonly type: 'order_read_due';
  readonly orderId: string;
  readonly why: 'items_due' | 'callback_read_failed';
}

export type DomainEvent = OrderSettled | OrderQueued | OrderReadDue;
export type DomainEventType = DomainEvent['type'];
/** The event of a type, e.g. `EventOf<'order_queued'>` is `OrderQueued`. */
export type EventOf<T extends DomainEventType> = Extract<DomainEvent, { type: T }>;
export type EventHandler<T extends DomainEventType> = (event: EventOf<T>) => void;

/** What a handler's failure is reported with: the error, the event, the handler's name. */
export type HandlerErrorReport = (error: unknown, event: DomainEvent, handler: string) => void;

/** A handler's name, as its method is called (`bind` prefixes `bound `). */
function handlerName(handler: (event: never) => void): string {
  return handler.name.replace(/^bound /, '') || 'anonymous';
}

export class DomainEvents {
  private readonly handlers = new Map<DomainEventType, Array<(event: DomainEvent) => void>>();
  private readonly counts = new Map<DomainEventType, number>();

  constructor(private readonly onError: HandlerErrorReport) {}

  /** Hands `event` to every handler of its type, one after the other, now. */
  publish(event: DomainEvent): void {
    this.counts.set(event.type, (this.counts.get(event.type) ?? 0) + 1);
    // a copy: a handler that unsubscribes (or subscribes another) does not change this delivery
    for (const handler of [...(this.handlers.get(event.type) ?? [])]) {
      try {
        handler(event);
      } catch (e) {
        this.onError(e, event, handlerName(handler));
      }
    }
  }

  /** Calls `handler` with each event of `type` published from now on; returns its unsubscribe. */
  subscribe<T extends DomainEventType>(type: T, handler: EventHandler<T>): () => void {
    const each = handler as (event: DomainEvent) => void;
    const list = this.handlers.get(type) ?? [];
    list.push(each);
    this.handlers.set(type, list);
    return () => {
      const at = list.indexOf(each);
      if (at >= 0) list.splice(at, 1);
    };
  }

  /** The names of the handlers of `type`, in the order they subscribed: for tests and tools. */
  handlerNames(type: DomainEventType): string[] {
    return (this.handlers.get(type) ?? []).map(handlerName);
  }

  /** How many events of `type` were published since the start: for tests and tools. */
  published(type: DomainEventType): number {
    return this.counts.get(type) ?? 0;
  }
}
