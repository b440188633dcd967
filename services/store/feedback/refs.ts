/**
 * The little of weave:/// refs that feedback needs: which project a ref belongs to and,
 * for a call ref, which call. Refs: `weave:///<entity>/<project>/<kind>/<rest>` (spec:
 * "Objects, refs, digests"); a call ref is `weave:///<entity>/<project>/call/<call_id>`.
 */

const PREFIX = "weave:///";

export interface ParsedRef {
  readonly projectId: string;
  readonly kind: string;
  /** The call id when the ref names a call (and nothing inside it), else null. */
  readonly callId: string | null;
}

/** Parses a weave:/// ref, or returns null when it is not one. */
export function parseWeaveRef(ref: string): ParsedRef | null {
  if (!ref.startsWith(PREFIX)) return null;
  const parts = ref.slice(PREFIX.length).split("/");
  const [entity, project, kind, ...rest] = parts;
  if (!entity || !project || !kind || rest.length === 0 || rest.some((p) => p === "")) return null;
  const projectId = `${entity}/${project}`;
  const callId = kind === "call" && rest.length === 1 ? decodePart(rest[0]!) : null;
  return { projectId, kind, callId };
}

function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** The ref of a call, as feedback names it. */
export function callRef(projectId: string, callId: string): string {
  return `${PREFIX}${projectId}/call/${encodeURIComponent(callId)}`;
}
