import { useEffect, useState, type ReactNode } from "react";
import { MeProvider, useIsAdmin } from "./access";
import { apiKey, getJson, onUnauthorized } from "./api";
import { ErrorBox } from "./components/common";
import { useLoad } from "./hooks";
import { AlertsPage } from "./pages/Alerts";
import { AnnotationQueuePage, AnnotationQueuesPage } from "./pages/AnnotationQueues";
import { EntitySettingsPage } from "./pages/ApiKeys";
import { EvaluationComparePage, EvaluationsPage } from "./pages/Evaluations";
import { LoginPage } from "./pages/Login";
import { MonitorsPage } from "./pages/Monitors";
import { ObjectPage, ObjectsPage, TablePage } from "./pages/Objects";
import { ProjectSettingsPage } from "./pages/ProjectSettings";
import { ProjectsPage } from "./pages/Projects";
import { ThreadPage, ThreadsPage } from "./pages/Threads";
import { TracePage } from "./pages/Trace";
import { TracesPage } from "./pages/Traces";
import { UsagePage } from "./pages/Usage";
import { projectRefOf, type ProjectRef } from "./project";
import { Link, match, navigate, seg, useLocation } from "./router";
import type { Project } from "./types";

type Page = (p: ProjectRef, params: Record<string, string>, search: URLSearchParams) => ReactNode;

/** The pages of a project, by URL pattern under `/{entity}/{project}`. */
const PROJECT_PAGES: [string, string | null, Page][] = [
  ["/traces", "Traces", (p) => <TracesPage project={p} />],
  ["/calls/:callId", null, (p, { callId }) => <TracePage project={p} callId={callId!} />],
  ["/threads", "Threads", (p) => <ThreadsPage project={p} />],
  ["/threads/:threadId", null, (p, { threadId }) => <ThreadPage project={p} threadId={threadId!} />],
  ["/evaluations", "Evaluations", (p) => <EvaluationsPage project={p} />],
  ["/evaluations/compare", null, (p, _, search) => <EvaluationComparePage project={p} ids={(search.get("ids") ?? "").split(",").filter(Boolean)} />],
  ["/annotation_queues", "Annotation queues", (p) => <AnnotationQueuesPage project={p} />],
  ["/annotation_queues/:queueId", null, (p, { queueId }) => <AnnotationQueuePage project={p} queueId={queueId!} />],
  ["/datasets", "Datasets", (p) => <ObjectsPage project={p} datasets />],
  ["/objects", "Objects", (p) => <ObjectsPage project={p} datasets={false} />],
  ["/objects/:objectId", null, (p, { objectId }, search) => <ObjectPage project={p} objectId={objectId!} version={search.get("version")} />],
  ["/tables/:digest", null, (p, { digest }) => <TablePage project={p} digest={digest!} />],
  ["/monitors", "Monitors", (p, _, search) => <MonitorsPage project={p} selected={search.get("monitor")} />],
  ["/usage", "Usage", (p) => <UsagePage project={p} />],
  // Linked for admins of the entity only (AdminLink); the pages themselves tell others they are for admins.
  ["/alerts", null, (p) => <AlertsPage project={p} />],
  ["/settings", null, (p) => <ProjectSettingsPage project={p} />],
];

export function App() {
  const loc = useLocation();
  const [loggedIn, setLoggedIn] = useState(apiKey.get() !== null);
  useEffect(() => {
    onUnauthorized(() => {
      apiKey.clear();
      setLoggedIn(false);
    });
  }, []);
  if (!loggedIn || loc.path === "/login") {
    return (
      <LoginPage
        expired={!loggedIn && loc.path !== "/login" && sessionStorage.getItem("tracehouse.wasLoggedIn") === "1"}
        onLogin={() => {
          sessionStorage.setItem("tracehouse.wasLoggedIn", "1");
          setLoggedIn(true);
          if (loc.path === "/login") navigate("/", { replace: true });
        }}
      />
    );
  }
  const logout = () => {
    apiKey.clear();
    sessionStorage.removeItem("tracehouse.wasLoggedIn");
    setLoggedIn(false);
    navigate("/login");
  };
  return (
    <MeProvider>
      <Shell path={loc.path} search={loc.search} onLogout={logout} />
    </MeProvider>
  );
}

function Shell({ path, search, onLogout }: { path: string; search: URLSearchParams; onLogout: () => void }) {
  const parts = path.split("/").filter(Boolean);
  // `/{entity}/settings` is the entity's page (a project named "settings" keeps its pages below it: `/{entity}/settings/traces`…).
  const entityPage = parts.length === 2 && parts[1] === "settings" ? decodeURIComponent(parts[0]!) : null;
  const project: ProjectRef | null = parts.length >= 2 && entityPage === null ? projectRefOf(parts[0]!, parts[1]!) : null;
  const rest = `/${parts.slice(2).join("/")}`;
  let content: ReactNode = null;
  if (entityPage !== null) content = <EntitySettingsPage entity={entityPage} />;
  else if (!project) content = path === "/" ? <ProjectsPage /> : <NotFound />;
  else if (parts.length === 2) content = <Redirect to={`${project.base}/traces`} />;
  else {
    for (const [pattern, , page] of PROJECT_PAGES) {
      const params = match(pattern, rest);
      if (params) {
        content = page(project, params, search);
        break;
      }
    }
    content ??= <NotFound />;
  }
  return (
    <div className="shell">
      <header className="topbar">
        <Link to="/" className="brand">
          tracehouse
        </Link>
        <ProjectPicker current={project} section={parts[2] ?? "traces"} />
        {project && (
          <nav>
            {PROJECT_PAGES.filter(([, label]) => label !== null).map(([pattern, label]) => (
              <Link key={pattern} to={`${project.base}${pattern}`} className={rest.startsWith(pattern) || (pattern === "/traces" && rest.startsWith("/calls")) ? "active" : ""}>
                {label}
              </Link>
            ))}
            <AdminLink project={project} path="/alerts" label="Alerts" active={rest.startsWith("/alerts")} />
            <AdminLink project={project} path="/settings" label="Settings" active={rest.startsWith("/settings")} />
          </nav>
        )}
        <button className="logout" onClick={onLogout}>
          Log out
        </button>
      </header>
      <main key={project?.projectId ?? "none"}>{content}</main>
    </div>
  );
}

/** A link to a project page for admins of its entity only. */
function AdminLink({ project, path, label, active }: { project: ProjectRef; path: string; label: string; active: boolean }) {
  if (!useIsAdmin(project.entity)) return null;
  return (
    <Link to={`${project.base}${path}`} className={active ? "active" : ""}>
      {label}
    </Link>
  );
}

function ProjectPicker({ current, section }: { current: ProjectRef | null; section: string }) {
  const projects = useLoad((signal) => getJson<{ projects: Project[] }>("/projects", signal), []);
  const list = projects.data?.projects ?? [];
  const value = current?.projectId ?? "";
  const known = list.some((p) => p.project_id === value);
  const page = ["traces", "threads", "evaluations", "annotation_queues", "datasets", "objects", "monitors", "usage", "settings"].includes(section) ? section : "traces";
  return (
    <select
      className="project-picker"
      aria-label="Project"
      value={value}
      onChange={(e) => {
        const p = list.find((x) => x.project_id === e.target.value);
        if (p) navigate(`/${seg(p.entity)}/${seg(p.name)}/${page}`);
      }}
    >
      <option value="" disabled>
        {projects.error ? "projects: error" : "Choose a project"}
      </option>
      {value && !known && <option value={value}>{value}</option>}
      {list.map((p) => (
        <option key={p.project_id} value={p.project_id}>
          {p.project_id}
        </option>
      ))}
    </select>
  );
}

function Redirect({ to }: { to: string }) {
  useEffect(() => navigate(to, { replace: true }), [to]);
  return null;
}

function NotFound() {
  return <ErrorBox error="No such page." />;
}
