import { NotFoundError } from "../../errors.js";
import type { ObjectLabelSet } from "./objectLabels.js";
import type { ObjectMeta } from "./objectRows.js";

/** Every version of one object (deleted ones included), ranked, and its live labels. */
export interface ObjectVersions {
  readonly projectId: string;
  readonly objectId: string;
  readonly versions: readonly ObjectMeta[];
  readonly labels: ObjectLabelSet;
}

const VERSION_INDEX = /^v(\d{1,9})$/;

/**
 * The live version `ref` names: `latest` (the latest live version), `v<N>` (version_index N),
 * a digest, or an alias (a digest wins over an alias written the same). NotFoundError with what
 * was missing: the object, the version, or the version was deleted.
 */
export function resolveVersion(object: ObjectVersions, ref: string): ObjectMeta {
  const { projectId, objectId, versions } = object;
  const name = JSON.stringify(objectId);
  if (versions.length === 0) throw new NotFoundError(`object ${name} not found in project ${projectId}`);
  const found = findVersion(object, ref);
  if (!found) {
    const what = ref === "latest" ? "no live version" : `no version ${JSON.stringify(ref)} (a digest, latest, v<N> or an alias)`;
    throw new NotFoundError(`object ${name} has ${what} in project ${projectId}`);
  }
  if (found.deleted_at !== null) {
    throw new NotFoundError(`object ${name} version v${found.version_index} (${found.digest}) was deleted at ${found.deleted_at}`);
  }
  return found;
}

function findVersion(object: ObjectVersions, ref: string): ObjectMeta | undefined {
  const { versions, labels } = object;
  if (ref === "latest") return versions.find((v) => v.is_latest === 1);
  const index = VERSION_INDEX.exec(ref);
  if (index) return versions.find((v) => v.version_index === Number(index[1]));
  const byDigest = versions.find((v) => v.digest === ref);
  if (byDigest) return byDigest;
  const aliased = labels.aliases.get(ref);
  return aliased === undefined ? undefined : versions.find((v) => v.digest === aliased);
}
