import { RefParseError } from "../../errors.js";
import { parseRef, projectIdOf } from "../../refs.js";

/** What feedback needs of its weave:/// ref: the ref's project and, for a call ref, which call. */
export interface FeedbackTarget {
  readonly projectId: string;
  readonly kind: string;
  /** The call id when the ref names a call (and nothing inside it), else null. */
  readonly callId: string | null;
}

/** The target of a ref, or null when the text is not a well-formed ref (ground refs.ts). */
export function feedbackTarget(text: string): FeedbackTarget | null {
  try {
    const ref = parseRef(text);
    const callId = ref.kind === "call" && ref.extra.length === 0 ? ref.callId : null;
    return { projectId: projectIdOf(ref), kind: ref.kind, callId };
  } catch (err) {
    if (err instanceof RefParseError) return null;
    throw err;
  }
}
