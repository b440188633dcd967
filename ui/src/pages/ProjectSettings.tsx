import { useState, type FormEvent } from "react";
import { AdminsOnly } from "../access";
import { getJson, putJson } from "../api";
import type { ProjectRef } from "../project";
import { ErrorBox, Loading, Section } from "../components/common";
import { formatBytes, formatNumber } from "../format";
import { useAction, useLoad } from "../hooks";
import { Link, seg } from "../router";
import type { ProjectSettings } from "../types";

/** A project's settings, for admins of its entity: how long its calls are kept, and the disk its data uses. */
export function ProjectSettingsPage({ project }: { project: ProjectRef }) {
  return (
    <div className="page settings">
      <h2>Settings of {project.projectId}</h2>
      <AdminsOnly entity={project.entity}>
        <ProjectSettingsForm project={project} />
        <p>
          <Link to={`/${seg(project.entity)}/settings`}>API keys of {project.entity}</Link>
        </p>
      </AdminsOnly>
    </div>
  );
}

function ProjectSettingsForm({ project }: { project: ProjectRef }) {
  const path = `/projects/${seg(project.entity)}/${seg(project.project)}/settings`;
  const loaded = useLoad((signal) => getJson<ProjectSettings>(path, signal), [path]);
  const [saved, setSaved] = useState<ProjectSettings | null>(null);
  const settings = saved ?? loaded.data;
  return (
    <>
      <ErrorBox error={loaded.error} />
      <Loading when={loaded.loading && !settings} />
      {settings && (
        <>
          <Section title="Retention">
            <RetentionEditor path={path} settings={settings} onSaved={setSaved} />
          </Section>
          <Section title="Storage">
            <p className="storage">
              <span className="storage-used" title={`${formatNumber(settings.storage_bytes)} bytes`}>
                {formatBytes(settings.storage_bytes)}
              </span>{" "}
              <span className="muted">on disk for this project's data (an estimate: each table's size times the project's share of its rows).</span>
            </p>
          </Section>
        </>
      )}
    </>
  );
}

function retentionText({ retention_days, effective_retention_days }: ProjectSettings): string {
  if (effective_retention_days === null) return "Everything is kept: neither this project nor the server sets a retention.";
  const days = `${formatNumber(effective_retention_days)} day${effective_retention_days === 1 ? "" : "s"}`;
  return retention_days === null ? `Calls are kept ${days} (the server's default).` : `Calls are kept ${days} (this project's setting).`;
}

function RetentionEditor({ path, settings, onSaved }: { path: string; settings: ProjectSettings; onSaved: (s: ProjectSettings) => void }) {
  const [days, setDays] = useState(settings.retention_days === null ? "" : String(settings.retention_days));
  const { run: save, busy, error } = useAction(async (retention_days: number | null) => {
    const next = await putJson<ProjectSettings>(path, { retention_days });
    onSaved(next);
    setDays(next.retention_days === null ? "" : String(next.retention_days));
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save(Number(days));
  };
  return (
    <>
      <p className="retention-effective">{retentionText(settings)}</p>
      <form className="settings-form" onSubmit={submit}>
        <label>
          Keep calls for{" "}
          <input type="number" name="retentionDays" min={1} step={1} required value={days} onChange={(e) => setDays(e.target.value)} aria-label="Retention in days" /> days
        </label>
        <button type="submit" className="primary" disabled={busy || days === ""}>
          Save
        </button>
        <button type="button" disabled={busy || settings.retention_days === null} onClick={() => void save(null)}>
          Use the server's default
        </button>
      </form>
      <p className="muted small">Calls older than this, with their feedback and what only they reference, leave every read within minutes and are then deleted from disk.</p>
      <ErrorBox error={error} />
    </>
  );
}
