import { bytesDigest, pythonJsonDumps } from "../../digests.js";
import { ValidationError } from "../../errors.js";
import { parseLossless, stringifyLossless, type LosslessObject, type LosslessValue } from "../../losslessJson.js";

/**
 * What `/obj/create` derives from a value, as the Weave server derives it (facts from its
 * object_class_util and get_kind):
 * - the digest over `json.dumps(val, sort_keys=True)` (services/digests.ts);
 * - `kind` is `op` when the value is a dict whose type is `Op`: its `weave_type.type` when it
 *   has both `_type` and `weave_type`, else its `_type`;
 * - the classes come from a dict whose `_bases` ends with `Object` or `BaseObject` then
 *   `BaseModel`: the leaf class is its `_class_name`; the base class is the base before
 *   `Object`/`BaseObject` when there is one, else the leaf class itself;
 * - `builtin_object_class` on a dict without such a hierarchy marks it as that class, as the
 *   Weave server's dump of a builtin object writes it: `_type` first, `name` and
 *   `description` (null when missing: the fields of every builtin class), the value's own keys,
 *   then `_class_name` and `_bases: [BaseObject, BaseModel]`. The Weave server also validates
 *   the value against the class and fills that class's own defaults; we do not carry its
 *   registry of classes, so a value missing some defaulted field of its class gets another
 *   digest than Weave's server would give it.
 */
export interface PreparedObject {
  /** The value stored (after builtin_object_class marked it). */
  readonly val: LosslessValue;
  readonly digest: string;
  readonly kind: "op" | "object";
  readonly baseObjectClass: string | null;
  readonly leafObjectClass: string | null;
  /** JSON text stored and answered (key order as sent). */
  readonly valText: string;
  /** Length of the canonical text the digest is taken over. */
  readonly sizeBytes: number;
}

const WEAVE_OBJECT_BASES = new Set(["Object", "BaseObject"]);
const BUILTIN_BASES = ["BaseObject", "BaseModel"];
const BUILTIN_FIELDS = ["name", "description"];
const CLASS_PATH = ["body", "obj", "builtin_object_class"];

export function prepareObject(value: LosslessValue, builtinClass: string | null): PreparedObject {
  const val = builtinClass === null ? value : markBuiltinClass(value, builtinClass);
  const classes = objectClasses(val);
  const canonical = pythonJsonDumps(val);
  return {
    val,
    digest: bytesDigest(Buffer.from(canonical, "utf8")),
    kind: typeOf(val) === "Op" ? "op" : "object",
    baseObjectClass: classes?.base ?? null,
    leafObjectClass: classes?.leaf ?? null,
    valText: stringifyLossless(val),
    sizeBytes: canonical.length,
  };
}

/** The leaf and base classes of a Weave object (see above), or null for any other value. */
export function objectClasses(val: LosslessValue): { leaf: string | null; base: string | null } | null {
  if (!(val instanceof Map)) return null;
  const bases = val.get("_bases");
  if (!Array.isArray(bases) || bases.length < 2) return null;
  if (bases[bases.length - 1] !== "BaseModel" || !WEAVE_OBJECT_BASES.has(String(bases[bases.length - 2]))) return null;
  const leaf = asString(val.get("_class_name"));
  const base = bases.length > 2 ? asString(bases[bases.length - 3] ?? null) : leaf;
  return { leaf, base };
}

/** The value's Weave type: `weave_type.type` or `_type` of a dict that has `_type`. */
function typeOf(val: LosslessValue): string | null {
  if (!(val instanceof Map) || !val.has("_type")) return null;
  const weaveType = val.get("weave_type");
  if (weaveType !== undefined) return weaveType instanceof Map ? asString(weaveType.get("type") ?? null) : null;
  return asString(val.get("_type") ?? null);
}

const asString = (v: LosslessValue | undefined): string | null => (typeof v === "string" ? v : null);

function markBuiltinClass(val: LosslessValue, builtinClass: string): LosslessObject {
  if (!(val instanceof Map)) throw ValidationError.at(CLASS_PATH, "builtin_object_class needs a value that is a JSON object");
  const classes = objectClasses(val);
  if (classes) {
    if (classes.leaf !== builtinClass) {
      throw ValidationError.at(CLASS_PATH, `builtin_object_class ${JSON.stringify(builtinClass)} differs from the value's class ${JSON.stringify(classes.leaf)}`);
    }
    return val;
  }
  const marked: LosslessObject = new Map([["_type", builtinClass]]);
  for (const field of BUILTIN_FIELDS) marked.set(field, val.get(field) ?? null);
  for (const [key, item] of val) if (!marked.has(key) && key !== "_class_name" && key !== "_bases") marked.set(key, item);
  marked.set("_class_name", builtinClass);
  marked.set("_bases", [...BUILTIN_BASES]);
  return marked;
}

/**
 * The member at `path` of a JSON body's text, read losslessly (the body was already validated
 * as JSON, so a parse error here is a fault, not bad input); undefined when absent.
 */
export function losslessMember(bodyText: string, path: readonly string[]): LosslessValue | undefined {
  let node: LosslessValue | undefined = parseLossless(bodyText);
  for (const key of path) node = node instanceof Map ? node.get(key) : undefined;
  return node;
}
