import { isJsonObject, type JsonObject } from "../../json.js";
import { flattenCallJson, leafHash, type FlattenedJson } from "./flatten.js";

/**
 * An OTLP span's resource and scope, stored once per project and distinct pair in
 * `span_resources` rather than in every span's row (docs/architecture.md, "A span's resource
 * and scope"). A span's call keeps them in `attributes.otel.resource` and `.scope`, the last
 * two keys of `otel`, itself the last key of the attributes (otlp/mapSpan.ts): so the call's
 * attributes text is its own text with the pair's (`SpanResource.text`) spliced in before its
 * last two braces, and its row keeps that own text, its leaves, and the pair's hash
 * (`resource_hash`).
 * Attributes of any other shape are stored whole, with no hash.
 */

/** The part of a span's attributes stored once: `,"resource":{...},"scope":{...}`, and its hash. */
export interface SpanResource {
  readonly hash: string;
  readonly text: string;
  /** The flattened leaves of the pair, paths `attributes.otel.resource.…` and `attributes.otel.scope.…`. */
  leaves(): FlattenedJson;
}

/** A call's attributes without its span's resource and scope, and those. */
export interface SplitAttributes {
  readonly own: JsonObject;
  readonly resource: SpanResource;
}

/** Where the leaves are that `span_resources` holds for a call with a `resource_hash`: these paths and those below them. */
export const SHARED_LEAF_ROOTS = ["attributes.otel.resource", "attributes.otel.scope"] as const;

export const isSharedLeafPath = (path: string): boolean => SHARED_LEAF_ROOTS.some((root) => path === root || path.startsWith(`${root}.`));

/** The resource made once per scope group: its spans share their scope object (and their resource object). */
const madeForScope = new WeakMap<JsonObject, { readonly resource: JsonObject; readonly made: SpanResource }>();

/** The split of a call's attributes, or null when they are not a span's of the shape above. */
export function splitSpanResource(attributes: JsonObject): SplitAttributes | null {
  const otel = attributes["otel"];
  if (!isJsonObject(otel) || lastKey(attributes) !== "otel") return null;
  const own = otel["attributes"];
  const resource = otel["resource"];
  const scope = otel["scope"];
  if (!isJsonObject(own) || !isJsonObject(resource) || !isJsonObject(scope) || !keysAre(otel, OTEL_KEYS)) return null;
  return { own: { ...attributes, otel: { attributes: own } }, resource: spanResource(resource, scope) };
}

const OTEL_KEYS = ["attributes", "resource", "scope"];

function spanResource(resource: JsonObject, scope: JsonObject): SpanResource {
  const known = madeForScope.get(scope);
  if (known && known.resource === resource) return known.made;
  const text = `,"resource":${JSON.stringify(resource)},"scope":${JSON.stringify(scope)}`;
  const made: SpanResource = {
    hash: leafHash(text),
    text,
    leaves: () => flattenCallJson({ attributes: { otel: { resource, scope } }, inputs: undefined, output: undefined, summary: undefined }),
  };
  madeForScope.set(scope, { resource, made });
  return made;
}

/** The attributes text of a call whose row holds `ownText` and whose resource is `resourceText`. */
export function withResource(ownText: string, resourceText: string): string {
  return `${ownText.slice(0, -2)}${resourceText}}}`;
}

function lastKey(object: JsonObject): string | undefined {
  let last: string | undefined;
  for (const key in object) last = key;
  return last;
}

function keysAre(object: JsonObject, keys: readonly string[]): boolean {
  let i = 0;
  for (const key in object) if (key !== keys[i++]) return false;
  return i === keys.length;
}

/** What names a `span_resources` row: its project and hash. */
export const resourceKey = (projectId: string, hash: string): string => `${projectId}\n${hash}`;

/** A `span_resources` row to write. */
export interface ResourceRow {
  readonly projectId: string;
  readonly resource: SpanResource;
}

/** The `span_resources` rows a write needs, by `resourceKey`. */
export class SpanResources {
  readonly rows = new Map<string, ResourceRow>();

  add(projectId: string, resource: SpanResource): void {
    const key = resourceKey(projectId, resource.hash);
    if (!this.rows.has(key)) this.rows.set(key, { projectId, resource });
  }
}

/** Keys remembered as written: past it the memory starts again (a row written twice is kept once). */
const MAX_REMEMBERED = 100_000;

/**
 * Which `span_resources` rows one store has been given by this process: most writes then
 * insert none (a service's spans share a few resources).
 */
export class WrittenResources {
  private readonly keys = new Set<string>();

  /** The rows of `wanted` not yet written. */
  unwritten(wanted: SpanResources): [string, ResourceRow][] {
    return [...wanted.rows].filter(([key]) => !this.keys.has(key));
  }

  remember(keys: readonly string[]): void {
    if (this.keys.size + keys.length > MAX_REMEMBERED) this.keys.clear();
    for (const key of keys) this.keys.add(key);
  }
}
