import { HeapPolicy } from './heap-policy.js';

describe('HeapPolicy', () => {
  it('does nothing until enabled (a process without the embedded database)', () => {
    const flags: string[] = [];
    const policy = new HeapPolicy((f) => flags.push(f));
    const release = policy.hold();
    release();
    expect(flags).toEqual([]);
  });

  it('enabled: the resting limit, the tighter one while held, back to resting when the last holder lets go', () => {
    const flags: string[] = [];
    const policy = new HeapPolicy((f) => flags.push(f));
    policy.enable();
    expect(flags).toEqual(['--heap-growing-percent=100']);
    const a = policy.hold();
    const b = policy.hold();
    expect(flags).toEqual(['--heap-growing-percent=100', '--heap-growing-percent=50']);
    a();
    a(); // a second call does not release another holder
    expect(flags).toHaveLength(2);
    b();
    expect(flags).toEqual(['--heap-growing-percent=100', '--heap-growing-percent=50', '--heap-growing-percent=100']);
  });

  it('enabled while held (a sync already running): the tighter limit at once', () => {
    const flags: string[] = [];
    const policy = new HeapPolicy((f) => flags.push(f));
    const release = policy.hold();
    policy.enable();
    policy.enable();
    expect(flags).toEqual(['--heap-growing-percent=50']);
    release();
    expect(flags).toEqual(['--heap-growing-percent=50', '--heap-growing-percent=100']);
  });
});
