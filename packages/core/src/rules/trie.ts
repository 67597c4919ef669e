// The binary trie a RuleSet (match.ts) keeps its address and CIDR rules in, one per address family and
// scope: 32 bits deep for IPv4, 128 for IPv6. Nodes live in typed arrays that grow by doubling, and a
// lookup walks at most the address's bits, in practice the depth at which a random address leaves the
// trie (about log2 of the ranges). Nothing is ever unlinked: a removed rule leaves its slot empty, and the
// RuleSet builds a fresh trie once empty slots are most of them, so a churn of bans does not grow it.

/** A binary trie of ranges over up to 128 bits, each range with a slot of type S (match.ts: its rules). */
export class Trie<S> {
  private zero = new Int32Array(1024);
  private one = new Int32Array(1024);
  /** Per node, 1 + the index of its slot in `slots`, or 0. */
  private at = new Int32Array(1024);
  private nodes = 1;
  readonly slots: S[] = [];
  /** Slots their owner emptied (match.ts counts them, to know when to build the trie afresh). */
  empty = 0;

  /** The slot of a range: made with `make` on first use, or undefined when there is none and no `make`. */
  slot(words: readonly number[], bits: number, make: () => S): S;
  slot(words: readonly number[], bits: number): S | undefined;
  slot(words: readonly number[], bits: number, make?: () => S): S | undefined {
    let node = 0;
    for (let b = 0; b < bits; b++) {
      const bit = ((words[b >>> 5] as number) >>> (31 - (b & 31))) & 1;
      const next = bit === 1 ? this.one : this.zero;
      let child = next[node] as number;
      if (child === 0) {
        if (make === undefined) return undefined;
        child = this.grow();
        (bit === 1 ? this.one : this.zero)[node] = child;
      }
      node = child;
    }
    let i = this.at[node] as number;
    if (i === 0) {
      if (make === undefined) return undefined;
      this.slots.push(make());
      i = this.slots.length;
      this.at[node] = i;
    }
    return this.slots[i - 1] as S;
  }

  private grow(): number {
    if (this.nodes === this.zero.length) {
      const size = this.nodes * 2;
      const copy = (a: Int32Array) => {
        const b = new Int32Array(size);
        b.set(a);
        return b;
      };
      this.zero = copy(this.zero);
      this.one = copy(this.one);
      this.at = copy(this.at);
    }
    return this.nodes++;
  }

  /** walk() for an IPv4 address as a number, all 32 bits: the decision path's, with no array made. */
  walkV4(n: number, seen: (slot: S, depth: number) => void): void {
    const { zero, one, at, slots } = this;
    let node = 0;
    for (let b = 0; ; b++) {
      const i = at[node] as number;
      if (i !== 0) seen(slots[i - 1] as S, b);
      if (b === 32) return;
      node = ((n >>> (31 - b)) & 1) === 1 ? (one[node] as number) : (zero[node] as number);
      if (node === 0) return;
    }
  }

  /** Gives `seen` each slot on the path of `words`, up to `bits` deep, shortest range first. */
  walk(words: readonly number[], bits: number, seen: (slot: S, depth: number) => void): void {
    const { zero, one, at, slots } = this;
    let node = 0;
    for (let b = 0; ; b++) {
      const i = at[node] as number;
      if (i !== 0) seen(slots[i - 1] as S, b);
      if (b === bits) return;
      const bit = ((words[b >>> 5] as number) >>> (31 - (b & 31))) & 1;
      node = (bit === 1 ? one[node] : zero[node]) as number;
      if (node === 0) return;
    }
  }
}
