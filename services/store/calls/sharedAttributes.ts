import { isJsonObject, type JsonObject } from "../../json.js";

/**
 * What the spans of one OTLP resource and scope share: `attributes.otel.resource` and
 * `attributes.otel.scope` (otlp/mapSpan.ts), the same in every span of an export's scope group
 * and of most exports from one process. Their text, when it ends the attributes text
 * (`"resource":…,"scope":…`, as mapSpan.ts writes it), is cut from `attributes` into
 * `attributes_shared`, a LowCardinality column, where a part keeps each distinct value once
 * instead of in every row: fewer bytes stored and merged (docs/benchmarks.md, "The resource and
 * scope once per part"). `attributes` stays a JSON object; `ATTRIBUTES_SQL` and
 * `wholeAttributes` give back the text as it was, byte for byte. Any call's attributes follow
 * the same rule; rows written before migration 51 have the whole text in `attributes` and an
 * empty `attributes_shared`. The leaves (`json_paths` / `json_values`, flatten.ts) are not split.
 */

/** The whole `attributes` text of a `calls` row, in SQL: what filters and searches read as `attributes`. */
export const ATTRIBUTES_SQL = "if(attributes_shared = '', attributes, concat(substring(attributes, 1, length(attributes) - 2), attributes_shared, '}}'))";

/** A row's two columns of the attributes text (a read may select neither; rows from before migration 51 have no second). */
export interface AttributesColumns<T extends string | null | undefined = string> {
  readonly attributes: T;
  readonly attributes_shared?: string | null;
}

/** The last resource and scope objects met, and their text: the spans of a scope group share both objects (mapSpan.ts). */
let lastResource: unknown = undefined;
let lastScope: unknown = undefined;
let lastText = "";

/** `"resource":<resource>,"scope":<scope>`, made once for the spans that share the two objects. */
function sharedText(resource: unknown, scope: unknown): string {
  if (resource !== lastResource || scope !== lastScope) {
    lastText = `"resource":${JSON.stringify(resource)},"scope":${JSON.stringify(scope)}`;
    lastResource = resource;
    lastScope = scope;
  }
  return lastText;
}

/** The two columns as the worker writes them. */
export interface StoredAttributes {
  readonly attributes: string;
  readonly attributes_shared: string;
}

const NOT_SPLIT = (text: string): StoredAttributes => ({ attributes: text, attributes_shared: "" });

/**
 * `text` (JSON.stringify of `attributes`) split into the two columns. The shared text is cut
 * only where `text` ends with it, so `wholeAttributes` gives back `text` whatever the keys' order.
 */
export function splitAttributes(attributes: JsonObject, text: string): StoredAttributes {
  const otel = attributes["otel"];
  if (!isJsonObject(otel) || otel["resource"] === undefined || otel["scope"] === undefined) return NOT_SPLIT(text);
  const shared = sharedText(otel["resource"], otel["scope"]);
  const start = text.length - 2 - shared.length;
  if (start < 1 || !text.endsWith("}}") || !text.startsWith(shared, start)) return NOT_SPLIT(text);
  // After another member of `otel`, the cut takes the comma before it; alone, `otel` keeps its braces.
  const before = text[start - 1];
  if (before !== "," && before !== "{") return NOT_SPLIT(text);
  const cut = before === "," ? start - 1 : start;
  return { attributes: `${text.slice(0, cut)}}}`, attributes_shared: text.slice(cut, text.length - 2) };
}

/** The attributes text a row's two columns were split from (ATTRIBUTES_SQL in TypeScript). */
export function wholeAttributes<T extends string | null | undefined>({ attributes, attributes_shared }: AttributesColumns<T>): T {
  return !attributes_shared || typeof attributes !== "string" ? attributes : (`${attributes.slice(0, -2)}${attributes_shared}}}` as T);
}
