import { useAdminEntities } from "../access";
import { getJson } from "../api";
import { ErrorBox, Loading } from "../components/common";
import { useLoad } from "../hooks";
import { Link, seg } from "../router";
import type { Project } from "../types";

export function ProjectsPage() {
  const projects = useLoad((signal) => getJson<{ projects: Project[] }>("/projects", signal), []);
  const list = projects.data?.projects ?? [];
  const adminOf = useAdminEntities(list.map((p) => p.entity));
  return (
    <div className="page">
      <h2>Projects</h2>
      <ErrorBox error={projects.error} />
      <Loading when={projects.loading} />
      {!projects.loading && !projects.error && list.length === 0 && <p className="muted">No project yet: projects appear here once they receive calls.</p>}
      <ul className="projects">
        {list.map((p) => (
          <li key={p.project_id}>
            <Link to={`/${seg(p.entity)}/${seg(p.name)}/traces`}>{p.project_id}</Link>
            {p.description && <span className="muted"> — {p.description}</span>}
          </li>
        ))}
      </ul>
      {adminOf.length > 0 && (
        <>
          <h3>Settings</h3>
          <ul className="projects entity-settings">
            {adminOf.map((entity) => (
              <li key={entity}>
                <Link to={`/${seg(entity)}/settings`}>{entity}: API keys</Link>
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
