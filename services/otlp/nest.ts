/**
 * Dotted attribute keys as nested objects, so that a dotted path
 * (`gen_ai.request.temperature`, `llm.input_messages.0.message.content`) reaches them.
 */
import type { OtlpAttributes } from "./batch.js";
import type { JsonObject, JsonValue } from "../json.js";
import { isJsonObject } from "../json.js";

/** Sets an own property, also for the key `__proto__`. */
export function setOwn(target: JsonObject, key: string, value: JsonValue): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** Dotted keys are nested at most this deep; the rest of a deeper key stays one literal key. */
export const MAX_KEY_DEPTH = 32;

/**
 * `{"a.b": 1, "a.c": 2}` → `{a: {b: 1, c: 2}}`. Keys are placed in sorted order, so a key
 * always comes before its extensions; when a path runs into a value that was not made
 * here (`"a.b": 1` and `"a.b.c": 2`), the rest of the key is kept as it is at that level
 * (`{a: {b: 1, "b.c": 2}}`). No value is lost or overwritten. Values are shared, not copied.
 * Nesting stops at `MAX_KEY_DEPTH` levels.
 */
export function nestDottedKeys(flat: OtlpAttributes): JsonObject {
  const root: JsonObject = {};
  const keys = Object.keys(flat);
  if (keys.length > 1) keys.sort();
  // Without object values, every object met on a path was made here: no need to remember them.
  const made: Set<JsonObject> | null = hasObjectValue(flat) ? new Set<JsonObject>([root]) : null;
  for (const key of keys) {
    const value = flat[key] ?? null;
    const split = splitKey(key);
    if (split === null) {
      setOwn(root, key, value);
      continue;
    }
    const { parts } = split;
    let node = root;
    let depth = 0;
    for (; depth < parts.length; depth++) {
      const part = parts[depth]!;
      const next = Object.hasOwn(node, part) ? node[part] : undefined;
      if (next === undefined) {
        const child: JsonObject = {};
        setOwn(node, part, child);
        made?.add(child);
        node = child;
      } else if (isJsonObject(next) && (made === null || made.has(next))) {
        node = next;
      } else {
        break;
      }
    }
    setOwn(node, depth === parts.length ? split.rest : depth === 0 ? key : key.slice(split.starts[depth]), value);
  }
  return root;
}

/** Whether an attribute value is a key-value list (an object). */
export function hasObjectValue(attributes: OtlpAttributes): boolean {
  for (const key in attributes) if (isJsonObject(attributes[key] ?? null)) return true;
  return false;
}

/** A dotted key cut for nesting: the parts it nests under, where each starts, and the rest (the last key). */
interface SplitKey {
  readonly parts: readonly string[];
  readonly starts: readonly number[];
  readonly rest: string;
}

/** Attribute keys repeat from span to span; the splits of short ones are kept, up to this many keys. */
const SPLIT_CACHE_SIZE = 4096;
const CACHED_KEY_LENGTH = 200;
const splitCache = new Map<string, SplitKey | null>();

function splitKey(key: string): SplitKey | null {
  let split = splitCache.get(key);
  if (split !== undefined) return split;
  split = cutKey(key);
  if (key.length > CACHED_KEY_LENGTH) return split;
  if (splitCache.size >= SPLIT_CACHE_SIZE) splitCache.clear();
  splitCache.set(key, split);
  return split;
}

function cutKey(key: string): SplitKey | null {
  let dot = key.indexOf(".");
  if (dot < 0) return null;
  const parts: string[] = [];
  const starts: number[] = [];
  let from = 0;
  for (let depth = 0; dot >= 0 && depth < MAX_KEY_DEPTH; depth++) {
    parts.push(key.slice(from, dot));
    starts.push(from);
    from = dot + 1;
    dot = key.indexOf(".", from);
  }
  return { parts, starts, rest: key.slice(from) };
}

/** An attribute key with its dots split once, for repeated lookups. */
export interface DottedKey {
  readonly key: string;
  readonly path: readonly string[];
  /** A path segment `*` stands for any one key (e.g. `mastra.*.input`, whose middle is the span's type). */
  readonly wildcard: boolean;
}

export const ANY_KEY = "*";

export function dottedKey(key: string): DottedKey {
  const path = key.split(".");
  return { key, path, wildcard: path.includes(ANY_KEY) };
}

/**
 * The value at a dotted key: the flat attribute itself when present, else what the nested
 * form holds at that path (e.g. `gen_ai.prompt` → `{"0": {role, content}}` built from
 * `gen_ai.prompt.0.role` …). Null values count as absent. `nested` is `nestDottedKeys(flat)`:
 * every flat key leaves its first part (or itself) at the top of `nested`, so a first part
 * absent there means the key is absent from both (one probe for most keys of the tables).
 */
export function lookup(flat: OtlpAttributes, nested: JsonObject, key: DottedKey): JsonValue | undefined {
  if (!Object.hasOwn(nested, key.path[0]!)) return undefined;
  if (key.wildcard) return lookupPath(nested, key.path, 0);
  if (Object.hasOwn(flat, key.key)) return flat[key.key] ?? undefined;
  let node: JsonValue | undefined = nested;
  for (const part of key.path) {
    if (!isJsonObject(node)) return undefined;
    node = Object.hasOwn(node, part) ? node[part] : undefined;
  }
  return node ?? undefined;
}

/** The value at `path` from `from` on in the nested form; a `*` segment tries each key of its level in order, the first found wins. */
function lookupPath(node: JsonValue | undefined, path: readonly string[], from: number): JsonValue | undefined {
  if (from === path.length) return node ?? undefined;
  if (!isJsonObject(node)) return undefined;
  const part = path[from]!;
  if (part !== ANY_KEY) return lookupPath(Object.hasOwn(node, part) ? node[part] : undefined, path, from + 1);
  for (const key of Object.keys(node)) {
    const found = lookupPath(node[key], path, from + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}
