/**
 * One pass over a span's attributes against a table from attribute key to the fields it
 * fills (the table: attributes.ts, `SPAN_KEYS`). Each field lists its keys in priority
 * order; the pass notes which of them the span has, a bit per key by its rank, so that the
 * fields are then read in priority order whatever the order of the attributes, and no key
 * the span does not have is looked up.
 *
 * A table key `k` is found by the attribute `k` itself, by the attributes of its flattened
 * family (`gen_ai.prompt.0.role` finds `gen_ai.prompt`), and by a key-value list sent at a
 * prefix of it (`gen_ai` = `{prompt: …}`); a `*` part stands for any one part
 * (`mastra.*.input`). What a found key holds is what `lookup` (nest.ts) gives: the attribute's
 * own value when the attribute is the key itself, taken in the pass; otherwise the nested form
 * at the key, read then (the pass only finds where to look: the nested form may hold nothing
 * there, when a shorter key's value stands in the way).
 *
 * What an attribute key finds is worked out once (`KeyTable.matchOf`): attribute keys repeat
 * from span to span, so the pass is one map lookup per attribute.
 */
import type { OtlpAttributes } from "./batch.js";
import { ANY_KEY, dottedKey, lookup, type DottedKey } from "./nest.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../json.js";

/** Field → its attribute keys in priority order (at most `MAX_KEYS_PER_FIELD`). */
export type FieldKeys<F extends string> = Readonly<Record<F, readonly string[]>>;

/** A field's keys are noted as the bits of an int32. */
export const MAX_KEYS_PER_FIELD = 31;

/** A table key as one of a field's keys: which field, its rank there as a bit, and its place among all keys. */
interface KeyUse {
  readonly field: number;
  readonly bit: number;
  readonly slot: number;
}

/** What one attribute key finds in the table. */
interface KeyMatch {
  /** The table keys it is: its value is theirs. */
  readonly own: readonly KeyUse[];
  /** The table keys whose flattened family it is in, or that it is through a `*` part: read from the nested form. */
  readonly family: readonly KeyUse[];
  /** The table keys below it, found when its value is a key-value list. */
  readonly below: readonly KeyUse[];
}

const NO_MATCH: KeyMatch = { own: [], family: [], below: [] };

/** The matches of keys up to this long are kept, up to this many keys (then they are all dropped). */
const MATCH_CACHE_SIZE = 4096;
const CACHED_KEY_LENGTH = 200;

/** A node of the table's keys, split at their dots. */
class KeyNode {
  readonly children = new Map<string, KeyNode>();
  /** The child for a `*` part. */
  any: KeyNode | null = null;
  /** The keys that end here. */
  readonly uses: KeyUse[] = [];
  /** The keys that end below here. */
  readonly usesBelow: KeyUse[] = [];
}

export class KeyTable<F extends string> {
  /** Field name → its number, the argument of `FoundKeys`' methods. */
  readonly field: Readonly<Record<F, number>>;
  /** By field, by rank. */
  readonly keys: readonly (readonly DottedKey[])[];
  /** By field: the slot of its first key (its keys' slots follow). */
  readonly firstSlot: readonly number[];
  readonly slots: number;
  private readonly root = new KeyNode();
  private readonly matches = new Map<string, KeyMatch>();

  constructor(table: FieldKeys<F>) {
    const names = Object.keys(table) as F[];
    this.field = Object.fromEntries(names.map((name, i) => [name, i])) as Record<F, number>;
    this.keys = names.map((name) => table[name].map(dottedKey));
    const firstSlot: number[] = [];
    let slots = 0;
    names.forEach((name, field) => {
      const keys = table[name];
      if (keys.length > MAX_KEYS_PER_FIELD) throw new Error(`${name}: ${keys.length} keys, more than ${MAX_KEYS_PER_FIELD}`);
      firstSlot.push(slots);
      keys.forEach((key, rank) => this.add(key, { field, bit: 1 << rank, slot: slots + rank }));
      slots += keys.length;
    });
    this.firstSlot = firstSlot;
    this.slots = slots;
  }

  /** What the attribute `key` finds. */
  matchOf(key: string): KeyMatch {
    let match = this.matches.get(key);
    if (match !== undefined) return match;
    match = this.match(key);
    if (key.length > CACHED_KEY_LENGTH) return match;
    if (this.matches.size >= MATCH_CACHE_SIZE) this.matches.clear();
    this.matches.set(key, match);
    return match;
  }

  private add(key: string, use: KeyUse): void {
    let node = this.root;
    for (const part of key.split(".")) {
      node.usesBelow.push(use);
      if (part === ANY_KEY) node = node.any ??= new KeyNode();
      else {
        let child = node.children.get(part);
        if (child === undefined) node.children.set(part, (child = new KeyNode()));
        node = child;
      }
    }
    node.uses.push(use);
  }

  private match(key: string): KeyMatch {
    const found = { own: [] as KeyUse[], family: [] as KeyUse[], below: [] as KeyUse[] };
    this.walk(this.root, key.split("."), 0, false, found);
    return found.own.length + found.family.length + found.below.length === 0 ? NO_MATCH : found;
  }

  /** The table keys from `node` (reached by the key's parts before `depth`) down that the key finds. */
  private walk(node: KeyNode, parts: readonly string[], depth: number, throughAny: boolean, found: { own: KeyUse[]; family: KeyUse[]; below: KeyUse[] }): void {
    if (depth === parts.length) {
      (throughAny ? found.family : found.own).push(...node.uses);
      found.below.push(...node.usesBelow);
      return;
    }
    // The key is in the flattened family of the keys ending here.
    found.family.push(...node.uses);
    const child = node.children.get(parts[depth]!);
    if (child !== undefined) this.walk(child, parts, depth + 1, throughAny, found);
    if (node.any !== null) this.walk(node.any, parts, depth + 1, true, found);
  }
}

/** Which bit of a non-zero mask is the lowest: the rank of the first key found. */
export function lowestRank(mask: number): number {
  return 31 - Math.clz32(mask & -mask);
}

/**
 * The table's keys one span has (`read`), then their values. One per table and thread, used
 * again for every span: a span's attributes are read and its fields made before the next
 * span's (what a span leaves in these arrays is read only for the keys it has).
 */
export class FoundKeys<F extends string> {
  /** By field: a bit per key found. */
  private readonly found: Int32Array;
  /** By field: a bit per key found as an attribute of its own (its value in `values`). */
  private readonly own: Int32Array;
  /** By slot: the value of a key found as an attribute of its own. */
  private readonly values: (JsonValue | undefined)[];
  private flat: OtlpAttributes = {};
  private nested: JsonObject = {};

  constructor(private readonly table: KeyTable<F>) {
    const fields = table.keys.length;
    this.found = new Int32Array(fields);
    this.own = new Int32Array(fields);
    this.values = new Array<JsonValue | undefined>(table.slots).fill(undefined);
  }

  /** One pass over `flat`; `nested` is `nestDottedKeys(flat)`, read only for keys found but not as attributes of their own. */
  read(flat: OtlpAttributes, nested: JsonObject): this {
    this.found.fill(0);
    this.own.fill(0);
    this.flat = flat;
    this.nested = nested;
    for (const key in flat) {
      const match = this.table.matchOf(key);
      if (match === NO_MATCH) continue;
      const value = flat[key] ?? null;
      for (const use of match.own) {
        this.found[use.field]! |= use.bit;
        this.own[use.field]! |= use.bit;
        this.values[use.slot] = value;
      }
      for (const use of match.family) this.found[use.field]! |= use.bit;
      if (match.below.length !== 0 && isJsonObject(value)) for (const use of match.below) this.found[use.field]! |= use.bit;
    }
    return this;
  }

  /** The keys of `field` found, a bit per rank (`lowestRank` gives the first). */
  mask(field: number): number {
    return this.found[field]!;
  }

  /** The value of `field`'s key of `rank` (found: a bit of `mask`); undefined when it holds nothing or null. */
  value(field: number, rank: number): JsonValue | undefined {
    if ((this.own[field]! & (1 << rank)) !== 0) return this.values[this.table.firstSlot[field]! + rank] ?? undefined;
    return lookup(this.flat, this.nested, this.table.keys[field]![rank]!);
  }

  /** The value of `field`'s first key found that holds one (not null). */
  first(field: number): JsonValue | undefined {
    for (let mask = this.found[field]!; mask !== 0; mask &= mask - 1) {
      const value = this.value(field, lowestRank(mask));
      if (value !== undefined) return value;
    }
    return undefined;
  }
}
