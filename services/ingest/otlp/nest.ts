/**
 * Dotted attribute keys as nested objects, so that a dotted path
 * (`gen_ai.request.temperature`, `llm.input_messages.0.message.content`) reaches them.
 */
import type { OtlpAttributes } from "./batch.js";
import type { JsonObject, JsonValue } from "../../json.js";
import { isJsonObject } from "../../json.js";

/** Sets an own property, also for the key `__proto__`. */
export function setOwn(target: JsonObject, key: string, value: JsonValue): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** Dotted keys are nested at most this deep; the rest of a deeper key stays one literal key. */
export const MAX_KEY_DEPTH = 32;

function ownValue(target: JsonObject, key: string): JsonValue | undefined {
  return Object.hasOwn(target, key) ? target[key] : undefined;
}

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
  let made: Set<JsonObject> | null = null;
  for (const key of keys) {
    const value = flat[key] ?? null;
    let dot = key.indexOf(".");
    if (dot < 0) {
      setOwn(root, key, value);
      continue;
    }
    made ??= new Set<JsonObject>([root]);
    let node = root;
    let from = 0;
    for (let depth = 0; dot >= 0 && depth < MAX_KEY_DEPTH; depth++) {
      const part = key.slice(from, dot);
      const next = ownValue(node, part);
      if (next === undefined) {
        const child: JsonObject = {};
        setOwn(node, part, child);
        made.add(child);
        node = child;
      } else if (isJsonObject(next) && made.has(next)) {
        node = next;
      } else {
        break;
      }
      from = dot + 1;
      dot = key.indexOf(".", from);
    }
    setOwn(node, from === 0 ? key : key.slice(from), value);
  }
  return root;
}

/** An attribute key with its dots split once, for repeated lookups. */
export interface DottedKey {
  readonly key: string;
  readonly path: readonly string[];
}

export function dottedKey(key: string): DottedKey {
  return { key, path: key.split(".") };
}

/**
 * The value at a dotted key: the flat attribute itself when present, else what the nested
 * form holds at that path (e.g. `gen_ai.prompt` → `{"0": {role, content}}` built from
 * `gen_ai.prompt.0.role` …). Null values count as absent.
 */
export function lookup(flat: OtlpAttributes, nested: JsonObject, key: DottedKey): JsonValue | undefined {
  if (Object.hasOwn(flat, key.key)) return flat[key.key] ?? undefined;
  let node: JsonValue | undefined = nested;
  for (const part of key.path) {
    if (!isJsonObject(node)) return undefined;
    node = ownValue(node, part);
  }
  return node ?? undefined;
}
