import { DomainEvents, type DomainEvent } from './domain-events.js';

function bus(): { events: DomainEvents; errors: Array<{ error: unknown; event: DomainEvent; handler: string }> } {
  const errors: Array<{ error: unknown; event: DomainEvent; handler: string }> = [];
  return { events: new DomainEvents((error, event, handler) => errors.push({ error, event, handler })), errors };
}

describe('DomainEvents', () => {
  it('hands an event to the handlers of its type only, in the order they subscribed', () => {
    const { events } = bus();
    const seen: string[] = [];
    events.subscribe('order_settled', (e) => seen.push(`first ${e.type} ${e.orderId}`));
    events.subscribe('order_queued', (e) => seen.push(`queue ${e.orderId}`));
    events.subscribe('order_settled', (e) => seen.push(`second ${e.orderId}`));
    events.subscribe('order_read_due', (e) => seen.push(`read ${e.orderId} ${e.why}`));

    events.publish({ type: 'order_settled', orderId: 'o1' });
    events.publish({ type: 'order_read_due', orderId: 'o2', why: 'items_due' });

    expect(seen).toEqual(['first order_settled o1', 'second o1', 'read o2 items_due']);
  });

  it('delivers before publish returns', () => {
    const { events } = bus();
    let handled = 0;
    events.subscribe('order_queued', () => handled++);
    events.publish({ type: 'order_queued', orderId: 'o1' });
    expect(handled).toBe(1);
  });

  it('stops calling a handler once it unsubscribed, and keeps the others', () => {
    const { events } = bus();
    const seen: string[] = [];
    const off = events.subscribe('order_queued', (e) => seen.push(`a ${e.orderId}`));
    events.subscribe('order_queued', (e) => seen.push(`b ${e.orderId}`));
    events.publish({ type: 'order_queued', orderId: 'o1' });
    off();
    off(); // twice is harmless
    events.publish({ type: 'order_queued', orderId: 'o2' });
    expect(seen).toEqual(['a o1', 'b o1', 'b o2']);
  });

  it('finishes a delivery as it began when a handler unsubscribes another during it', () => {
    const { events } = bus();
    const seen: string[] = [];
    let offB: () => void = () => undefined;
    events.subscribe('order_settled', () => {
      seen.push('a');
      offB();
    });
    offB = events.subscribe('order_settled', () => seen.push('b'));
    events.publish({ type: 'order_settled', orderId: 'o1' });
    events.publish({ type: 'order_settled', orderId: 'o1' });
    expect(seen).toEqual(['a', 'b', 'a']);
  });

  it("reports a handler's error with the event and the handler's name, and goes on to the next handler", () => {
    const { events, errors } = bus();
    const seen: string[] = [];
    const boom = new Error('boom');
    events.subscribe('order_settled', function releaseWaitingCallbacks() {
      throw boom;
    });
    events.subscribe('order_settled', (e) => seen.push(e.orderId));

    expect(() => events.publish({ type: 'order_settled', orderId: 'o1' })).not.toThrow();

    expect(seen).toEqual(['o1']);
    expect(errors).toEqual([{ error: boom, event: { type: 'order_settled', orderId: 'o1' }, handler: 'releaseWaitingCallbacks' }]);
  });

  it('names the handlers of a type, in the order they subscribed', () => {
    const { events } = bus();
    const takeUpQueuedOrders = () => undefined;
    const off = events.subscribe('order_queued', takeUpQueuedOrders);
    const queue = { readAgain(): void {} };
    events.subscribe('order_queued', queue.readAgain.bind(queue));
    expect(events.handlerNames('order_queued')).toEqual(['takeUpQueuedOrders', 'readAgain']);
    expect(events.handlerNames('order_settled')).toEqual([]);
    off();
    expect(events.handlerNames('order_queued')).toEqual(['readAgain']);
  });

  it('counts the events published of each type, handled or not', () => {
    const { events } = bus();
    events.publish({ type: 'order_queued', orderId: 'o1' });
    events.publish({ type: 'order_queued', orderId: 'o2' });
    events.publish({ type: 'order_read_due', orderId: 'o1', why: 'callback_read_failed' });
    expect([events.published('order_queued'), events.published('order_read_due'), events.published('order_settled')]).toEqual([2, 1, 0]);
  });
});
