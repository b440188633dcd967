import type { Field, FieldKind, FieldScope, FieldSet } from "../expr/fields.js";
import { tupleElementSql, type ParamBuilder } from "../sql.js";
import { payloadLeafSql } from "./fields.js";
import { InvalidFieldError } from "../../errors.js";

/**
 * Call fields computed from the feedback on each call, a field set of the calls query
 * (`$expr` and `sort_by`):
 *
 *   feedback.[<feedback_type>].<field>
 *
 * where <field> is one of
 * - `payload.<key>...` or `payload` (JSON leaf / whole JSON text), `id`, `wb_user_id`,
 *   `creator`, `weave_ref`, `annotation_ref`, `runnable_ref`, `call_ref`, `trigger_ref`,
 *   `queue_id` (strings), `created_at` (datetime): taken from the call's most recent
 *   feedback of that type (latest `created_at`, then highest id) that has a value there;
 *   NULL when there is none. This is Weave's `feedback.[type].path`, with its "any one
 *   feedback" made deterministic.
 * - `count`: how many feedback of that type the call has (0 when none).
 * Examples: `feedback.[wandb.reaction.1].payload.emoji`, `feedback.[wandb.note.1].count`,
 * `feedback.[wandb.runnable.my_scorer].payload.output.score`.
 *
 * Values are scalars, so every operator works (`$eq`, `$in`, `$gt(e)`, `$contains`,
 * `$convert` incl. `exists`, and sorting). Limit: a call with several feedback of one type
 * is compared on its latest one only (a call whose reactions are 👍 then 🎉 matches 🎉,
 * not 👍); "any of its reactions is 👍" is not expressible here: find those calls through
 * /feedback/query on `payload.emoji` (their `weave_ref`s) and filter by `call_ids`.
 *
 * Plan (18.16 has no correlated subqueries): one scalar subquery, run once per query,
 * groups the live feedback of that type by call into two arrays, keys `<project_id>/<call_id>`
 * and values; each call row looks its key up with `transform` (a hash lookup on constant
 * arrays) to get an index into the values. The arrays start with a sentinel ('' → NULL, or
 * 0 for `count`) because `transform` refuses empty arrays, and index 1 is its default.
 * The subquery reads the queried project's feedback only (when the caller passes it); keys
 * carry the project as well, so a call only ever sees its own project's feedback.
 */

const COLUMNS: Readonly<Record<string, { kind: FieldKind }>> = {
  id: { kind: "string" },
  wb_user_id: { kind: "string" },
  creator: { kind: "string" },
  weave_ref: { kind: "string" },
  annotation_ref: { kind: "string" },
  runnable_ref: { kind: "string" },
  call_ref: { kind: "string" },
  trigger_ref: { kind: "string" },
  queue_id: { kind: "string" },
  created_at: { kind: "datetime" },
};

const PATH = /^feedback\.\[([^\]]+)\]\.(.+)$/su;
const CONTROL = /\p{Cc}/u;
const MAX_TYPE_CHARS = 512;

export const FEEDBACK_FIELD_HELP = "feedback.[<feedback_type>].(payload.<path> | payload | count | id | created_at | wb_user_id | creator | weave_ref | annotation_ref | runnable_ref | call_ref | trigger_ref | queue_id)";

/** `feedback.[<type>].<field>`; the feedback read is the scope's project's when it names one. */
export const CALL_FEEDBACK_FIELDS: FieldSet = {
  name: "feedback on calls",
  known: [FEEDBACK_FIELD_HELP],
  resolve: (path, pb, scope) => (path.startsWith("feedback.") ? feedbackField(path, pb, scope) : undefined),
};

function feedbackField(path: string, pb: ParamBuilder, { projectId }: FieldScope): Field {
  const match = PATH.exec(path);
  const type = match?.[1];
  const rest = match?.[2];
  if (!type || !rest) throw new InvalidFieldError(`invalid feedback field ${JSON.stringify(path)}; expected ${FEEDBACK_FIELD_HELP}`);
  if (type.length > MAX_TYPE_CHARS || CONTROL.test(type)) throw new InvalidFieldError(`invalid feedback type in ${JSON.stringify(path)}`);

  const typeParam = pb.str(type);
  const projectFilter = projectId === undefined ? "" : `project_id = ${pb.str(projectId)} AND `;
  let value: string;
  let kind: FieldKind;
  let absent = "NULL";
  if (rest === "count") {
    value = "count()";
    kind = "number";
    absent = "0";
  } else if (Object.hasOwn(COLUMNS, rest)) {
    value = rest === "created_at" ? "max(created_at)" : `argMax(${rest}, (created_at, id))`;
    kind = COLUMNS[rest]!.kind;
  } else if (rest === "payload") {
    value = "argMax(payload, (created_at, id))";
    kind = "json_leaf";
  } else if (rest.startsWith("payload.")) {
    value = `argMax(${payloadLeafSql(rest.slice("payload.".length), pb)}, (created_at, id))`;
    kind = "json_leaf";
  } else {
    throw new InvalidFieldError(`unknown feedback field ${JSON.stringify(rest)} in ${JSON.stringify(path)}; expected ${FEEDBACK_FIELD_HELP}`);
  }

  // One alias per use, named after this use's first parameter: unique within the query.
  const alias = `feedback_map_${/pb_(\d+)/.exec(typeParam)?.[1] ?? "0"}`;
  const map =
    `(SELECT (arrayPushFront(groupArray(fb_key), ''), arrayPushFront(groupArray(fb_value), ${absent})) ` +
    `FROM (SELECT concat(project_id, '/', call_id) AS fb_key, ${value} AS fb_value FROM feedback FINAL ` +
    `WHERE ${projectFilter}deleted = 0 AND call_id != '' AND feedback_type = ${typeParam} GROUP BY project_id, call_id)) AS ${alias}`;
  const sql = `${tupleElementSql(map, 2)}[transform(concat(project_id, '/', id), tupleElement(${alias}, 1), arrayEnumerate(tupleElement(${alias}, 1)), 1)]`;
  return { sql, kind, nullable: rest !== "count" };
}
