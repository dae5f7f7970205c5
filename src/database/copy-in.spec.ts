import { copyField } from './copy-in.js';

describe('COPY text format', () => {
  it('escapes backslash, tab, line feed and carriage return, and nothing else', () => {
    expect(copyField('plain 礼品卡 🎮 "q" \'s\' {b}')).toBe('plain 礼品卡 🎮 "q" \'s\' {b}');
    expect(copyField('a\tb\nc\r\nd\\e')).toBe('a\\tb\\nc\\r\\nd\\\\e');
    // a text that reads like COPY's null marker stays a text
    expect(copyField('\\N')).toBe('\\\\N');
  });

  it('writes null as \\N, objects as JSON (escaped like any text), dates in ISO 8601, numbers and booleans as they print', () => {
    expect(copyField(null)).toBe('\\N');
    expect(copyField(undefined)).toBe('\\N');
    expect(copyField({ a: 'x\ty', n: [1, null] })).toBe('{"a":"x\\\\ty","n":[1,null]}');
    expect(copyField(new Date('2026-11-22T08:00:00.123Z'))).toBe('2026-11-22T08:00:00.123Z');
    expect(copyField(12.5)).toBe('12.5');
    expect(copyField(true)).toBe('true');
  });

  it('gives the same answer call after call (no state kept between texts)', () => {
    for (let i = 0; i < 3; i++) {
      expect(copyField('x\ty')).toBe('x\\ty');
      expect(copyField('xy')).toBe('xy');
    }
  });
});
