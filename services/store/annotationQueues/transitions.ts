import { ANNOTATION_TRANSITIONS, type AnnotationState } from "../../contract/annotationQueues.js";
import { ClientError } from "../../errors.js";

/** What a progress request does: write the new state, or nothing (the annotator is in it already). */
export type TransitionOutcome = "write" | "noop";

/**
 * One annotator's move of one item from `current` (null: they never touched it) to `target`,
 * by ANNOTATION_TRANSITIONS: the same state is a no-op; a move the table does not allow is a
 * 409 that names both states and what is allowed.
 */
export function transition(current: AnnotationState | null, target: AnnotationState): TransitionOutcome {
  if (current === target) return "noop";
  const allowed = ANNOTATION_TRANSITIONS[current ?? "none"];
  if (allowed.includes(target)) return "write";
  const from = current === null ? "not started (no state yet)" : `'${current}'`;
  const options = allowed.length === 0 ? "none: it is final" : allowed.map((s) => `'${s}'`).join(", ");
  throw new ClientError(409, `Cannot move the item from ${from} to '${target}'; allowed from there: ${options}. Nothing was changed.`);
}
