import { InvalidFieldError } from "../../errors.js";
import { keyPathSegments, type Field, type FieldSet } from "../expr/fields.js";
import { tupleElementSql, type ParamBuilder } from "../sql.js";
import { CALL_JSON_LEAVES } from "./jsonLeaves.js";
import { JSON_PARTS, MAX_JSON_DEPTH } from "./flatten.js";

/**
 * The fields of objects that `expand_columns` references (spec: "expand_columns on the calls
 * query"), one field set of the calls query (queryFields.ts).
 *
 * An expand column is a dotted path into a call's JSON parts (`inputs.example`) whose value
 * is a ref. A field below it (`inputs.example.question`) names a leaf of the value the ref
 * resolves to. Columns nest: with `inputs.model` and `inputs.model.config` both expanded,
 * `inputs.model.config.name` takes `config` in the value of `inputs.model`, resolves that
 * ref too, and takes `name` in its value (an intermediate ref that is not listed is not
 * followed: the field is NULL).
 *
 * Resolution happens before the query (services/query/expandRefs.ts): the distinct refs
 * the project's calls hold at the outermost column are read (CallsReadRepository.refsAt),
 * resolved through the objects and tables stores, and each field becomes a lookup of the
 * call's ref in two bound arrays (ref → leaf text) with `transform` (a hash lookup on
 * constant arrays). A call whose column is not a resolvable ref of the queried project, or
 * whose resolved value has nothing at the path, gets the call's own leaf at the path: NULL
 * for a ref string (a string has no keys), the inline value when the column holds a dict.
 *
 * Leaf texts are encoded as store/calls/flatten.ts encodes call leaves (strings raw, numbers as
 * JavaScript writes them, `true`/`false`/`null`, `{}`/`[]`), plus the JSON text of a
 * non-empty object or array named whole; so every operator and sort works on them as on
 * call leaves.
 */

/** The resolved leaves of one field: at column `column`, the ref `keys[i]` gives `values[i]`. */
export interface ExpandedField {
  readonly column: string;
  readonly keys: readonly string[];
  readonly values: readonly string[];
  /** Row refs at the column resolved inside ClickHouse (past MAX_EXPANDED_REFS refs; see RowRefLeaves). */
  readonly rows?: RowRefLeaves;
}

/**
 * Table-row refs resolved inside ClickHouse, for a column whose calls hold more refs than
 * can be bound into one query: every ref of the project at the column that ends in
 * `/id/<row digest>` (ROW_REF_TAIL) is split into its root (the ref before that step) and
 * the row digest; `roots[i]` names the table `tables[i]` (resolved by the caller: a table
 * ref, or an object path that leads to one); the row must be held by that table (its
 * committed positions), and its leaf at `leafPath` (`val.<keys>`, table_row_leaves) is the
 * field's value. A ref whose root names no table, whose table does not hold the row, or
 * whose row has no scalar leaf at the path gets the call's own leaf. Unlike the refs bound
 * from Node, a path naming a non-empty dict or list inside the row finds no leaf here.
 */
export interface RowRefLeaves {
  readonly projectId: string;
  readonly roots: readonly string[];
  readonly tables: readonly string[];
  readonly leafPath: string;
}

/** The end of a ref that names a table row by digest (no percent-escapes in the digest). */
export const ROW_REF_TAIL = "/id/[^/%]+$";

/** Checks an expand column (`<part>.<key>...`) and returns it; InvalidFieldError otherwise. */
export function checkExpandColumn(column: string): string {
  const dot = column.indexOf(".");
  const root = dot < 0 ? column : column.slice(0, dot);
  const refuse = (why: string): never => {
    throw new InvalidFieldError(`expand column ${JSON.stringify(column.slice(0, 200))}: ${why}`, ["body", "expand_columns"]);
  };
  if (dot < 0 || !(JSON_PARTS as readonly string[]).includes(root)) refuse(`must be a path below ${JSON_PARTS.join(", ")} (e.g. inputs.example)`);
  try {
    keyPathSegments(column.slice(dot + 1), MAX_JSON_DEPTH, column);
  } catch (e) {
    if (e instanceof InvalidFieldError) refuse(e.message);
    throw e;
  }
  return column;
}

/**
 * The expand columns a field path goes through, shortest first, each nested in the next,
 * and the keys left below the last; undefined when the path is under no expand column.
 * Columns that do not nest in the chain of the shortest one are not followed.
 */
export function expansionOf(path: string, columns: readonly string[]): { chain: string[]; leafKeys: string[] } | undefined {
  const matching = [...new Set(columns)].filter((c) => path.startsWith(`${c}.`)).sort((a, b) => a.length - b.length);
  if (matching.length === 0) return undefined;
  const chain = [matching[0]!];
  for (const column of matching.slice(1)) if (column.startsWith(`${chain[chain.length - 1]}.`)) chain.push(column);
  const last = chain[chain.length - 1]!;
  return { chain, leafKeys: path.slice(last.length + 1).split(".") };
}

/** A field set over resolved expansions, by field path (only those paths answer). */
export function expandedFields(fields: ReadonlyMap<string, ExpandedField>): FieldSet {
  return {
    name: "fields of expanded refs",
    known: [...fields.keys()],
    resolve: (path, pb) => {
      const field = fields.get(path);
      return field ? expandedField(path, field, pb) : undefined;
    },
  };
}

function expandedField(path: string, { column, keys, values, rows }: ExpandedField, pb: ParamBuilder): Field {
  const own = CALL_JSON_LEAVES.leafSql(path, pb);
  if (keys.length === 0 && !rows) return { sql: own, kind: "json_leaf", nullable: true };
  // The column's leaf text ('' when absent: arrayElement at index 0 is the default).
  const ref = `json_values[indexOf(json_paths, ${pb.str(column)})]`;
  const fallback = rows ? rowLeafSql(ref, column, rows, own, pb) : own;
  if (keys.length === 0) return { sql: fallback, kind: "json_leaf", nullable: true };
  const k = pb.strings(keys);
  const v = pb.strings(values);
  const at = `transform(${ref}, ${k}, arrayEnumerate(${k}), 0)`;
  return { sql: `if(${at} = 0, ${fallback}, ${v}[${at}])`, kind: "json_leaf", nullable: true };
}

/**
 * The row leaf of the call's ref (RowRefLeaves), else `own`: a lookup in two arrays (the
 * refs that resolve, their leaves) that one scalar subquery builds inside ClickHouse. A
 * sentinel pair at index 1 ('' → NULL) keeps the arrays typed when nothing resolves; no row ref is ''.
 */
function rowLeafSql(ref: string, column: string, rows: RowRefLeaves, own: string, pb: ParamBuilder): string {
  const project = pb.str(rows.projectId);
  const c = pb.str(column);
  const tail = pb.str(ROW_REF_TAIL);
  const prefix = pb.str(`weave:///${rows.projectId}/`);
  const roots = pb.strings(rows.roots);
  const tables = pb.strings(rows.tables);
  const refs = `SELECT ref, table_digest, row_digest FROM (
      SELECT ref, transform(replaceRegexpOne(ref, ${tail}, ''), ${roots}, ${tables}, '') AS table_digest,
        substring(ref, length(replaceRegexpOne(ref, ${tail}, '')) + 5) AS row_digest
      FROM (SELECT DISTINCT json_values[indexOf(json_paths, ${c})] AS ref FROM calls
        WHERE project_id = ${project} AND has(json_paths, ${c}))
      WHERE startsWith(ref, ${prefix}) AND match(ref, ${tail})
    ) WHERE table_digest != ''`;
  const held = `SELECT ref, row_key FROM (
      SELECT table_digest, row_digest, row_key FROM table_positions
      WHERE project_id = ${project}
        AND (table_digest, generation) IN (SELECT digest, any(generation) FROM tables WHERE project_id = ${project} GROUP BY digest)
        AND (table_digest, row_digest) IN (SELECT table_digest, row_digest FROM (${refs}))
    ) AS positions ALL INNER JOIN (${refs}) AS row_refs USING (table_digest, row_digest)`;
  const leaves = `SELECT row_key, any(value) AS value FROM table_row_leaves
      WHERE project_id = ${project} AND path = ${pb.str(rows.leafPath)} GROUP BY row_key`;
  const resolved = `SELECT ref, any(value) AS value FROM (${held}) AS held ALL INNER JOIN (${leaves}) AS leaves USING row_key GROUP BY ref`;
  const lookup = `(SELECT tuple(refs, arrayEnumerate(refs), values) FROM (
      SELECT arrayPushFront(groupArray(ref), '') AS refs, arrayPushFront(groupArray(toNullable(value)), NULL) AS values FROM (${resolved})))`;
  // transform with the call's own leaf as its default answers NULL on 18.16: the index is looked
  // up (1, the sentinel's NULL, when the ref did not resolve), then the value; a leaf is never NULL.
  const at = `transform(${ref}, tupleElement(${lookup}, 1), tupleElement(${lookup}, 2), toUInt32(1))`;
  return `if(match(${ref}, ${tail}), ifNull(${tupleElementSql(lookup, 3)}[${at}], ${own}), ${own})`;
}
