import { getJson } from "../api";
import { ErrorBox, Loading } from "../components/common";
import { useLoad } from "../hooks";
import { Link, seg } from "../router";
import type { Project } from "../types";

export function ProjectsPage() {
  const projects = useLoad((signal) => getJson<{ projects: Project[] }>("/projects", signal), []);
  const list = projects.data?.projects ?? [];
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
    </div>
  );
}
