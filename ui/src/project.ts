/** The project a page shows, as its URL names it (`/{entity}/{project}/…`). */
export interface ProjectRef {
  readonly entity: string;
  readonly project: string;
  readonly projectId: string;
  /** `/{entity}/{project}`, still URL-encoded: the prefix of the project's pages. */
  readonly base: string;
}

/** The project of a path's first two segments (as they appear in the URL, encoded). */
export function projectRefOf(entitySegment: string, projectSegment: string): ProjectRef {
  const entity = decodeURIComponent(entitySegment);
  const project = decodeURIComponent(projectSegment);
  return { entity, project, projectId: `${entity}/${project}`, base: `/${entitySegment}/${projectSegment}` };
}
