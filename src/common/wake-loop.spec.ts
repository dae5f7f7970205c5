import { WakeLoop } from './wake-loop.js';

/** Resolves once `n` passes have run (or rejects after a while). */
function passesOf(loop: { count: number }, n: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const check = () =>
      loop.count >= n ? resolve() : Date.now() - started > 5000 ? reject(new Error(`${loop.count} passes of ${n}`)) : setImmediate(check);
    check();
  });
}

describe('WakeLoop', () => {
  it(
    'runs its passes one at a time, each after the delay next() gives; stop() waits for the running pass and no pass ' + 'follows',
    async () => {
      const seen = { count: 0, overlapping: 0 };
      let inPass = false;
      const loop = new WakeLoop(
        async () => {
          if (inPass) seen.overlapping++;
          inPass = true;
          await new Promise((r) => setImmediate(r));
          inPass = false;
          return ++seen.count;
        },
        (n) => (n < 3 ? 0 : 60_000),
      );
      loop.start();
      await passesOf(seen, 3);
      loop.wake(); // between passes: the next one now
      await passesOf(seen, 4);
      await loop.stop();
      expect(loop.stopped).toBe(true);
      loop.wake();
      await new Promise((r) => setImmediate(r));
      expect(seen).toEqual({ count: 4, overlapping: 0 });
    },
  );

  it('a wake() during a pass is told to next() as woken, once', async () => {
    const woken: boolean[] = [];
    let release: () => void = () => undefined;
    const state = { count: 0 };
    const loop = new WakeLoop(
      () =>
        new Promise<number>((resolve) => {
          state.count++;
          release = () => resolve(state.count);
        }),
      (_n, w) => {
        woken.push(w);
        return w ? 0 : 60_000;
      },
    );
    loop.start();
    await passesOf(state, 1);
    loop.wake();
    loop.wake();
    release();
    await passesOf(state, 2); // woken: the next pass at once
    release();
    await new Promise((r) => setImmediate(r));
    expect(woken).toEqual([true, false]);
    const ended = loop.stop();
    expect(state.count).toBe(2);
    await ended;
  });

  it('startNow() begins the first pass within the call, and only when nothing runs or waits', async () => {
    const state = { count: 0 };
    const loop = new WakeLoop(
      () => {
        state.count++;
        return Promise.resolve(state.count);
      },
      () => 60_000,
    );
    loop.startNow();
    expect(state.count).toBe(1);
    loop.startNow(); // the first pass runs: no second one
    await passesOf(state, 1);
    await new Promise((r) => setImmediate(r));
    loop.startNow(); // the next pass is scheduled: none now
    expect(state.count).toBe(1);
    await loop.stop();
    loop.startNow();
    expect(state.count).toBe(1);
  });
});
