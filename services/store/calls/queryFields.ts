import { CALL_COST_FIELDS } from "../costs/costFields.js";
import { CALL_FEEDBACK_FIELDS } from "../feedback/callFields.js";
import { composeFields } from "../query/fields.js";
import { CALL_FIELDS } from "./fields.js";

/**
 * What a calls query (`query`, `sort_by`) may name: the call's own fields, its costs and the
 * feedback on it. The fields of objects that `expand_columns` references will be one more
 * set here, after the feedback.
 */
export const CALLS_QUERY_FIELDS = composeFields(CALL_FIELDS, CALL_COST_FIELDS, CALL_FEEDBACK_FIELDS);
