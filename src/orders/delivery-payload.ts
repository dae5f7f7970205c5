/**
 * Delivered items (upstream-api.md §2.8): the payload is split on newlines (LF, CR LF tolerated) and
 * blank lines are dropped; each remaining line is one purchased item, kept exactly as sent. Pure.
 */
export function parseDeliveryPayload(payload: string | null | undefined): string[] {
  if (payload == null || payload === '') return [];
  return payload
    .split('\n')
    .map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line))
    .filter((line) => line.trim() !== '');
}
