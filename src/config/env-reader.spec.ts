import { Reader } from './env-reader.js';

describe('env reader', () => {
  it('takes a valid value, treats an empty one as unset, and keeps the default for a refused one with a message naming it', () => {
    const r = new Reader({ A: ' 42 ', B: '', C: 'x', D: 'yes', E: '60/1m', F: '90s', G: 'ftp://u:p@h/' });
    expect(r.int('A', 1, 0, 100)).toBe(42);
    expect(r.int('B', 7, 0, 100)).toBe(7);
    expect(r.int('C', 7, 0, 100)).toBe(7);
    expect(r.bool('D', false)).toBe(true);
    expect(r.rateLimit('E', null)).toEqual({ requests: 60, windowMs: 60_000 });
    expect(r.duration('F', 1)).toBe(90_000);
    expect(r.url('G', ['http:', 'https:'])).toBeUndefined();
    expect(r.problems).toEqual([
      'C: must be an integer, got "x"',
      expect.stringMatching(/^G: must be a http: or https: URL, got "ftp:\/\/[^"]*"$/),
    ]);
    // a refused URL is echoed without its credentials
    expect(r.problems[1]).not.toContain('u:p');
  });

  it('reads decimals, days or off, bounded numbers and one of a list', () => {
    const r = new Reader({ M: '1.50', N: 'ten', O: 'off', P: '0.5', Q: 'loud' });
    expect(r.decimal('M', null)).toBe('1.50');
    expect(r.decimal('N', '2')).toBe('2');
    expect(r.daysOrOff('O', 30, 3650)).toBeNull();
    expect(r.number('P', 1, { min: 0, max: 1, what: 'above 0, at most 1' })).toBe(0.5);
    expect(r.oneOf('Q', 'info', ['info', 'debug'])).toBe('info');
    expect(r.problems.map((p) => p.split(':')[0])).toEqual(['N', 'Q']);
  });
});
