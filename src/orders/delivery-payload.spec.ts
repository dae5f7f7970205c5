import { parseDeliveryPayload } from './delivery-payload.js';

describe('delivered payload parsing', () => {
  it('splits on LF, one item a line', () => {
    expect(parseDeliveryPayload('A-1\nB-2\nC-3')).toEqual(['A-1', 'B-2', 'C-3']);
  });

  it('tolerates CR LF and drops empty and blank lines', () => {
    expect(parseDeliveryPayload('A-1\r\n\r\nB-2\r\n')).toEqual(['A-1', 'B-2']);
    expect(parseDeliveryPayload('\n\nA-1\n   \n\tB-2 x\n\n')).toEqual(['A-1', '\tB-2 x']);
    expect(parseDeliveryPayload('A-1\r\nB-2\nC-3\r\n')).toEqual(['A-1', 'B-2', 'C-3']);
  });

  it('keeps each item exactly, inner spaces and carriage returns included', () => {
    expect(parseDeliveryPayload('key one  \ncode\rinner')).toEqual(['key one  ', 'code\rinner']);
  });

  it('gives no items for an empty or missing payload', () => {
    expect(parseDeliveryPayload('')).toEqual([]);
    expect(parseDeliveryPayload('\r\n\n')).toEqual([]);
    expect(parseDeliveryPayload(null)).toEqual([]);
    expect(parseDeliveryPayload(undefined)).toEqual([]);
  });
});
