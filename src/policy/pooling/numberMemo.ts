// A memo from whole-number keys (0 <= key < 2^53) to numbers, in two typed arrays with open addressing:
// the planner's hottest lookup (the pooled fixed point's overlap times). A `Map` with keys past 2^31
// boxes each key it is asked for (a heap number) and hashes it; this allocates nothing.

/** Empty slot marker: no key is negative. */
const EMPTY = -1;

export class NumberMemo {
  private readonly keys: Float64Array;
  private readonly values: Float64Array;
  private readonly mask: number;
  private count = 0;

  /** Holds up to `max` entries; when full, the next new key clears it (the keys asked for drift). */
  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1)
      throw new RangeError(`NumberMemo: max must be a positive integer, got ${max}`);
    // At most half full, so that a probe ends soon.
    let slots = 2;
    while (slots < 2 * max) slots *= 2;
    this.keys = new Float64Array(slots).fill(EMPTY);
    this.values = new Float64Array(slots);
    this.mask = slots - 1;
  }

  get size(): number {
    return this.count;
  }

  /** The slot of `key`, or of the empty slot where it would go. */
  private slot(key: number): number {
    const lo = key >>> 0;
    const hi = (key / 4294967296) >>> 0;
    let h = Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b);
    h ^= h >>> 15;
    let at = h & this.mask;
    const keys = this.keys;
    while (keys[at] !== key && keys[at] !== EMPTY) at = (at + 1) & this.mask;
    return at;
  }

  /** The value memoised for `key`, or undefined. */
  get(key: number): number | undefined {
    const at = this.slot(key);
    return this.keys[at] === key ? this.values[at] : undefined;
  }

  set(key: number, value: number): void {
    if (!(Number.isInteger(key) && key >= 0 && key <= Number.MAX_SAFE_INTEGER))
      throw new RangeError(`NumberMemo: key must be a whole number in [0, 2^53), got ${key}`);
    let at = this.slot(key);
    if (this.keys[at] !== key) {
      if (this.count >= this.max) {
        this.clear();
        at = this.slot(key);
      }
      this.keys[at] = key;
      this.count++;
    }
    this.values[at] = value;
  }

  clear(): void {
    this.keys.fill(EMPTY);
    this.count = 0;
  }
}
