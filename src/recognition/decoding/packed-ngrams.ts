// The n-gram tables of a character LM as typed arrays. Each gram is one number: the indices of its
// code points in the file's symbol list (from 1) as digits in base `radix`, the first the most
// significant, exact while radix^order stays within 2^53. The keys are sorted and found by binary
// search. A Map of strings cost hundreds of bytes an n-gram while the JSON loaded; a key and its
// value cost 16 bytes (12 from a packed file), which lets the LM know millions of n-grams
// (docs/recognition.md).

/** The symbols of an LM file and the numbers that stand for them. */
export class SymbolCoder {
  readonly radix: number;
  private readonly indices = new Map<string, number>();

  constructor(symbols: readonly string[]) {
    symbols.forEach((symbol, i) => this.indices.set(symbol, i + 1));
    this.radix = symbols.length + 1;
  }

  /** The symbol's index, 0 for one the file does not have. */
  indexOf(symbol: string): number {
    return this.indices.get(symbol) ?? 0;
  }

  /** The key of a gram of the file's symbols. */
  keyOf(gram: string): number {
    let key = 0;
    for (const symbol of gram) key = key * this.radix + this.indexOf(symbol);
    return key;
  }

  /** Whether every gram of up to `order` symbols has an exact key. */
  fits(order: number): boolean {
    return this.radix ** order <= Number.MAX_SAFE_INTEGER + 1;
  }
}

/**
 * Sorted keys and their values: doubles, or whole numbers to divide by `divisor` (a packed file's
 * thousandths, 4 bytes a value instead of 8; the quotient is the double its decimal form parses to).
 */
export class PackedTable {
  readonly keys: Float64Array;
  private readonly values: Float64Array | Int32Array;
  private readonly divisor: number;

  constructor(keys: Float64Array, values: Float64Array | Int32Array, divisor = 1) {
    this.keys = keys;
    this.values = values;
    this.divisor = divisor;
  }

  /** Keys and values in any order, sorted here. */
  static fromPairs(keys: readonly number[], values: readonly number[]): PackedTable {
    const order = keys.map((_, i) => i).sort((a, b) => (keys[a] as number) - (keys[b] as number));
    return new PackedTable(
      Float64Array.from(order, (i) => keys[i] as number),
      Float64Array.from(order, (i) => values[i] as number),
    );
  }

  get(key: number): number | undefined {
    let low = 0;
    let high = this.keys.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const found = this.keys[middle] as number;
      if (found === key) return (this.values[middle] as number) / this.divisor;
      if (found < key) low = middle + 1;
      else high = middle - 1;
    }
    return undefined;
  }
}
