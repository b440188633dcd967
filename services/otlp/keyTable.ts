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
 */
import type { OtlpAttributes } from "./batch.js";
import { dottedKey, keyParts, lookup, type DottedKey, type KeyParts } from "./nest.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../json.js";

/** Field → its attribute keys in priority order (at most `MAX_KEYS_PER_FIELD`). */
export type FieldKeys<F extends string> = Readonly<Record<F, readonly string[]>>;

/** A field's keys are noted as the bits of an int32. */
export const MAX_KEYS_PER_FIELD = 31;

/** A table key as one of a field's keys: which field, its rank there, and its place among all keys. */
interface KeyUse {
  readonly field: number;
  readonly bit: number;
  readonly slot: number;
}

/** A node of the table's keys, split at their dots. */
class KeyNode {
  readonly children = new Map<string, KeyNode>();
  /** The child for a `*` part. */
  any: KeyNode | null = null;
  /** The keys that end here. */
  readonly uses: KeyUse[] = [];
  /** The keys that end below here (a key-value list sent here may hold them). */
  readonly usesBelow: KeyUse[] = [];
}

export class KeyTable<F extends string> {
  /** Field name → its number, the argument of `FoundKeys`' methods. */
  readonly field: Readonly<Record<F, number>>;
  readonly root = new KeyNode();
  /** By field, by rank. */
  readonly keys: readonly (readonly DottedKey[])[];
  /** By field: the slot of its first key (its keys' slots follow). */
  readonly firstSlot: readonly number[];
  readonly slots: number;

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

  private add(key: string, use: KeyUse): void {
    let node = this.root;
    for (const part of key.split(".")) {
      node.usesBelow.push(use);
      if (part === "*") node = node.any ??= new KeyNode();
      else {
        let child = node.children.get(part);
        if (child === undefined) node.children.set(part, (child = new KeyNode()));
        node = child;
      }
    }
    node.uses.push(use);
  }
}

/** Which bit of a non-zero mask is the lowest: the rank of the first key found. */
export function lowestRank(mask: number): number {
  return 31 - Math.clz32(mask & -mask);
}

/**
 * The table's keys one span has (`read`), then their values. One per table and thread, used
 * again for every span: a span's attributes are read and its fields made before the next
 * span's (nothing is kept across spans but these arrays).
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
    const root = this.table.root;
    for (const key in flat) {
      const parts = keyParts(key);
      const first = partAt(key, parts, 0);
      const node = root.children.get(first);
      if (node !== undefined) this.walk(node, key, parts, 1, false);
      if (root.any !== null) this.walk(root.any, key, parts, 1, true);
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

  /** Notes the table keys that the attribute `key` finds, from `node` (reached by its parts before `depth`) down. */
  private walk(node: KeyNode, key: string, parts: KeyParts | null, depth: number, throughAny: boolean): void {
    if (depth === partCount(parts)) {
      const value = this.flat[key] ?? null;
      if (throughAny) this.note(node.uses);
      else this.noteOwn(node.uses, value);
      if (isJsonObject(value)) this.note(node.usesBelow);
      return;
    }
    // The attribute is in the flattened family of the keys ending here.
    this.note(node.uses);
    const part = partAt(key, parts, depth);
    const child = node.children.get(part);
    if (child !== undefined) this.walk(child, key, parts, depth + 1, throughAny);
    if (node.any !== null) this.walk(node.any, key, parts, depth + 1, true);
  }

  private note(uses: readonly KeyUse[]): void {
    for (const use of uses) this.found[use.field]! |= use.bit;
  }

  private noteOwn(uses: readonly KeyUse[], value: JsonValue): void {
    for (const use of uses) {
      this.found[use.field]! |= use.bit;
      this.own[use.field]! |= use.bit;
      this.values[use.slot] = value;
    }
  }
}

function partCount(parts: KeyParts | null): number {
  return parts === null ? 1 : parts.parts.length + 1;
}

/** The attribute key's part at `depth` (its parts, then the rest: nest.ts, `keyParts`). */
function partAt(key: string, parts: KeyParts | null, depth: number): string {
  if (parts === null) return key;
  return depth < parts.parts.length ? parts.parts[depth]! : parts.rest;
}
