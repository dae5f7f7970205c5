/**
 * The item merge, pure: how the items a report brings merge with the items stored (opened by the
 * updater, the one writer that decrypts) so that none is lost. A report that lacks some of the stored
 * items (a stale read, an empty payload) adds its new ones after them instead of replacing them, and
 * keeps the stored delivery data when it brings none; a report that has every stored item is taken as
 * it is. `OrderUpdater` seals and writes what `mergeItems` decides.
 */

/** Delivered items and their delivery data (the shape the updater seals). */
export interface DeliveredItems {
  items: string[];
  delivery_data: Record<string, unknown> | null;
}

/**
 * `store`: write `data`; `unchanged`: the merge equals what is stored, nothing to write. `kept`: how
 * many stored items the report lacked and the merge kept (0: none), of the `storedCount` stored.
 */
export type ItemMerge = ({ kind: 'unchanged' } | { kind: 'store'; data: DeliveredItems }) & { kept: number; storedCount: number };

/** The items of `items` that `other` does not have (as many times as they are missing: a multiset difference). */
export function withoutItems(items: readonly string[], other: readonly string[]): string[] {
  const left = new Map<string, number>();
  for (const i of other) left.set(i, (left.get(i) ?? 0) + 1);
  return items.filter((i) => {
    const n = left.get(i) ?? 0;
    if (n === 0) return true;
    left.set(i, n - 1);
    return false;
  });
}

/** `stored`: the items stored, null when there are none (or they cannot be opened: the report replaces them). */
export function mergeItems(stored: DeliveredItems | null, reported: DeliveredItems): ItemMerge {
  if (!stored) return { kind: 'store', data: reported, kept: 0, storedCount: 0 };
  const missing = withoutItems(stored.items, reported.items);
  const data =
    missing.length > 0
      ? {
          items: [...stored.items, ...withoutItems(reported.items, stored.items)],
          delivery_data: reported.delivery_data ?? stored.delivery_data,
        }
      : reported;
  const counts = { kept: missing.length, storedCount: stored.items.length };
  return JSON.stringify(stored) === JSON.stringify(data) ? { kind: 'unchanged', ...counts } : { kind: 'store', data, ...counts };
}
