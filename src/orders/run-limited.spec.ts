import { runLimited } from './run-limited.js';

describe('runLimited', () => {
  it('runs every item once, never more than the limit at a time', async () => {
    let running = 0;
    let most = 0;
    const seen: number[] = [];
    await runLimited([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
      running++;
      most = Math.max(most, running);
      await Promise.resolve();
      await Promise.resolve();
      seen.push(n);
      running--;
    });
    expect(seen.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(most).toBe(3);
  });

  it('takes the items in order, and is done at once with none', async () => {
    const started: number[] = [];
    await runLimited([1, 2, 3], 1, async (n) => {
      started.push(n);
    });
    expect(started).toEqual([1, 2, 3]);
    await expect(runLimited([], 4, () => Promise.reject(new Error('never called')))).resolves.toBeUndefined();
  });

  it('rejects with the first failure', async () => {
    await expect(
      runLimited([1, 2], 2, async (n) => {
        if (n === 2) throw new Error('two failed');
      }),
    ).rejects.toThrow('two failed');
  });
});
