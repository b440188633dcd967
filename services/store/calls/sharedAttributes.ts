import { isJsonObject, type JsonObject } from "../../json.js";

/**
 * What the spans of one OTLP resource and scope share: `attributes.otel.resource` and
 * `attributes.otel.scope` (otlp/mapSpan.ts), the same in every span of an export's scope group
 * and of most exports from one process. ClickHouse's cost of storing a row follows its bytes
 * (docs/benchmarks.md, "The resource and scope once per part"), so a `calls` row keeps them in
 * LowCardinality columns, where a part stores each distinct value once:
 * - their text, when it ends the attributes text (`"resource":…,"scope":…`, as mapSpan.ts
 *   writes it), goes to `attributes_shared` and is cut from `attributes`, which stays a JSON
 *   object; `ATTRIBUTES_SQL` and `wholeAttributes` give back the text as it was, byte for byte;
 * - their leaves (paths `attributes.otel.resource…` and `attributes.otel.scope…`, flatten.ts) go
 *   to `attributes_shared_paths` / `attributes_shared_values` instead of `json_paths` /
 *   `json_values` (flatten.ts), and count toward the call's leaf bound as before.
 * Any call's attributes follow the same rule. Rows written before migration 51 keep everything
 * in the first columns (the shared ones empty): filters and sorts read a shared path's leaf from
 * the shared columns, and from the others when those have none (jsonLeaves.ts). The refs that
 * `expand_columns` follows are read from `json_values` only: a resource or scope attribute holds
 * no Weave ref.
 */

/** The roots of the shared leaves' paths. */
const SHARED_ROOTS = ["attributes.otel.resource", "attributes.otel.scope"] as const;

/** Whether a leaf of this path is kept in the shared columns. */
export function isSharedPath(path: string): boolean {
  return SHARED_ROOTS.some((root) => path.startsWith(root) && (path.length === root.length || path[root.length] === "."));
}

/** The shared leaves' columns (for jsonLeaves.ts: rows written before hold them in `json_paths` / `json_values`). */
export const SHARED_LEAF_COLUMNS = { holds: isSharedPath, paths: "attributes_shared_paths", values: "attributes_shared_values" } as const;

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
  const cut = text[start - 1] === "," ? start - 1 : start;
  if (cut === start && text[start - 1] !== "{") return NOT_SPLIT(text);
  return { attributes: `${text.slice(0, cut)}}}`, attributes_shared: text.slice(cut, text.length - 2) };
}

/** The attributes text a row's two columns were split from (ATTRIBUTES_SQL in TypeScript). */
export function wholeAttributes<T extends string | null | undefined>({ attributes, attributes_shared }: AttributesColumns<T>): T {
  return !attributes_shared || typeof attributes !== "string" ? attributes : (`${attributes.slice(0, -2)}${attributes_shared}}}` as T);
}
