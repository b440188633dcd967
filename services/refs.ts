import { RefParseError } from "./errors.js";
/**
 * Weave refs (spec: "Objects, refs, digests"):
 *   weave:///<entity>/<project>/object/<name>:<digest>[/<edge>/<value>]...
 *   weave:///<entity>/<project>/op/<name>:<digest>[/<edge>/<value>]...
 *   weave:///<entity>/<project>/table/<digest>[/<edge>/<value>]...
 *   weave:///<entity>/<project>/call/<call_id>[/<edge>/<value>]...
 * An edge is `key`, `index`, `attr` or `id` (id = a table row digest). Inside names, digests,
 * call ids and path values, `/`, `:` and `%` are percent-encoded (`%2F`, `%3A`, `%25`) when
 * written; reading decodes any percent-escape. Entity and project are written as they are, as
 * the Weave clients write them; they cannot contain `/` (a project id is `<entity>/<project>`).
 */

const SCHEME = "weave:///";

export type RefEdge = "key" | "index" | "attr" | "id";
const EDGES: ReadonlySet<string> = new Set<RefEdge>(["key", "index", "attr", "id"]);

/** One step into the value a ref names, e.g. `{edge: "attr", value: "rows"}`. */
export interface RefPathPart {
  readonly edge: RefEdge;
  readonly value: string;
}

interface RefCommon {
  readonly entity: string;
  readonly project: string;
  readonly extra: readonly RefPathPart[];
}

export interface ObjectRef extends RefCommon {
  readonly kind: "object";
  readonly name: string;
  readonly digest: string;
}

export interface OpRef extends RefCommon {
  readonly kind: "op";
  readonly name: string;
  readonly digest: string;
}

export interface TableRef extends RefCommon {
  readonly kind: "table";
  readonly digest: string;
}

export interface CallRef extends RefCommon {
  readonly kind: "call";
  readonly callId: string;
}

export type WeaveRef = ObjectRef | OpRef | TableRef | CallRef;


function invalid(ref: string, reason: string): never {
  throw new RefParseError(ref, reason);
}

/**
 * Refs parsed lately, by text: a ref of a request is parsed by its contract, by the scope
 * check and by the resolver (1,000 refs a batch). Parsed refs are never modified (every
 * field is readonly), so one object may be shared. Cleared when full.
 */
const parsedRefs = new Map<string, WeaveRef>();
const PARSED_REFS_KEPT = 20_000;

export function parseRef(text: string): WeaveRef {
  const known = parsedRefs.get(text);
  if (known !== undefined) return known;
  const ref = parseRefText(text);
  if (parsedRefs.size >= PARSED_REFS_KEPT) parsedRefs.clear();
  parsedRefs.set(text, ref);
  return ref;
}

function parseRefText(text: string): WeaveRef {
  if (!text.startsWith(SCHEME)) invalid(text, `must start with ${SCHEME}`);
  const [entity = "", project = "", kind = "", id, ...rest] = text.slice(SCHEME.length).split("/");
  if (entity === "" || project === "") invalid(text, "entity and project must not be empty");
  if (id === undefined) invalid(text, "must be weave:///<entity>/<project>/<kind>/<id>");
  const common = { entity, project, extra: parseExtra(text, rest) };
  switch (kind) {
    case "object":
    case "op": {
      const [name, digest, ...more] = id.split(":");
      if (name === undefined || digest === undefined || more.length > 0) invalid(text, `${kind} must be written <name>:<digest>`);
      return { kind, ...common, name: idPart(text, name, "the name"), digest: idPart(text, digest, "the digest") };
    }
    case "table":
      return { kind, ...common, digest: idPart(text, id, "the digest") };
    case "call":
      return { kind, ...common, callId: idPart(text, id, "the call id") };
    default:
      return invalid(text, `unknown kind ${JSON.stringify(kind)} (expected object, op, table or call)`);
  }
}

/** A decoded, non-empty part of the id (a top-level function: no closure made per ref). */
function idPart(text: string, written: string, what: string): string {
  const value = decodePart(written) ?? invalid(text, `bad percent-encoding in ${what}`);
  return value === "" ? invalid(text, `${what} must not be empty`) : value;
}

/** The `<edge>/<value>` pairs after the id; a value may be empty (a dict key can be ""). */
function parseExtra(text: string, parts: string[]): RefPathPart[] {
  if (parts.length % 2 !== 0) invalid(text, "the path after the id must come in <edge>/<value> pairs");
  const extra: RefPathPart[] = [];
  for (let i = 0; i < parts.length; i += 2) {
    const edge = parts[i] ?? "";
    if (!isEdge(edge)) return invalid(text, `unknown path edge ${JSON.stringify(edge)} (expected key, index, attr or id)`);
    const value = decodePart(parts[i + 1] ?? "") ?? invalid(text, `bad percent-encoding in the ${edge} value`);
    extra.push({ edge, value });
  }
  return extra;
}

const isEdge = (s: string): s is RefEdge => EDGES.has(s);

/** Decodes percent-escapes (UTF-8); null when one is malformed. */
function decodePart(part: string): string | null {
  if (!part.includes("%")) return part;
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}

const encodePart = (s: string): string => s.replace(/[%/:]/g, (c) => (c === "%" ? "%25" : c === "/" ? "%2F" : "%3A"));

/** Writes a ref; throws RefParseError when a part cannot be written (an empty name, a `/` in the entity, an unknown edge). */
export function formatRef(ref: WeaveRef): string {
  const head = `${SCHEME}${ref.entity}/${ref.project}/${ref.kind}`;
  for (const name of [ref.entity, ref.project]) {
    if (name === "" || name.includes("/")) invalid(head, "entity and project must be non-empty and contain no '/'");
  }
  const part = (value: string, what: string): string => (value === "" ? invalid(head, `${what} must not be empty`) : encodePart(value));
  let id: string;
  if (ref.kind === "object" || ref.kind === "op") id = `${part(ref.name, "the name")}:${part(ref.digest, "the digest")}`;
  else if (ref.kind === "table") id = part(ref.digest, "the digest");
  else id = part(ref.callId, "the call id");
  const extra = ref.extra.map(({ edge, value }) => (isEdge(edge) ? `/${edge}/${encodePart(value)}` : invalid(head, `unknown path edge ${JSON.stringify(edge)}`)));
  return `${head}/${id}${extra.join("")}`;
}

/** `<entity>/<project>` of the project the ref belongs to. */
export function projectIdOf(ref: WeaveRef): string {
  return `${ref.entity}/${ref.project}`;
}

/** True when s is a well-formed ref (not merely a string starting with weave:///). */
export function isRefString(s: unknown): s is string {
  if (typeof s !== "string" || !s.startsWith(SCHEME)) return false;
  try {
    parseRef(s);
    return true;
  } catch (e) {
    if (e instanceof RefParseError) return false;
    throw e;
  }
}
