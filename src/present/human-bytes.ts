/**
 * A byte count for people: exact below 1 KiB, else three significant
 * figures in binary units (1074069680 -> "1.00 GiB"). JSON output keeps the
 * exact number; this is for text and pages only.
 */
export function humanBytes(bytes: number | string): string {
  const n = Number(bytes);
  if (!Number.isFinite(n) || n < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${units[unit] ?? 'EiB'}`;
}
