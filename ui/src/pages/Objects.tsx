import { postJson } from "../api";
import type { ProjectRef } from "../project";
import { ErrorBox, Loading, PageControls, Section } from "../components/common";
import { JsonView, parseRef } from "../components/JsonView";
import { formatTime } from "../format";
import { useLoad, usePaged } from "../hooks";
import { Link, seg } from "../router";
import type { Json, ObjVersion, TableRow } from "../types";

const TABLE_PAGE = 50;

/** Datasets (base class Dataset) or every other object, latest versions, with their tags and aliases. */
export function ObjectsPage({ project, datasets }: { project: ProjectRef; datasets: boolean }) {
  const objs = useLoad(
    (signal) =>
      postJson<{ objs: ObjVersion[] }>(
        "/objs/query",
        {
          project_id: project.projectId,
          filter: { latest_only: true, ...(datasets ? { base_object_classes: ["Dataset"] } : { exclude_base_object_classes: ["Dataset"] }) },
          sort_by: [{ field: "created_at", direction: "desc" }],
          metadata_only: true,
          include_tags_and_aliases: true,
          limit: 1000,
        },
        signal,
      ).then((r) => r.objs),
    [project.projectId, datasets],
  );
  const list = objs.data ?? [];
  return (
    <div className="page">
      <h2>{datasets ? "Datasets" : "Objects"}</h2>
      <ErrorBox error={objs.error} />
      <Loading when={objs.loading} />
      {!objs.loading && list.length === 0 && !objs.error && <p className="muted">None yet.</p>}
      {list.length > 0 && (
        <table className="plain" aria-label={datasets ? "Datasets" : "Objects"}>
          <thead>
            <tr>
              <th>name</th>
              <th>kind</th>
              <th>class</th>
              <th>versions</th>
              <th>latest version created</th>
              <th>tags</th>
              <th>aliases</th>
            </tr>
          </thead>
          <tbody>
            {list.map((o) => (
              <tr key={o.object_id}>
                <td>
                  <Link to={`${project.base}/objects/${seg(o.object_id)}`}>{o.object_id}</Link>
                </td>
                <td>{o.kind}</td>
                <td>{o.leaf_object_class ?? o.base_object_class ?? ""}</td>
                <td>{o.version_index + 1}</td>
                <td>{formatTime(o.created_at)}</td>
                <td>{(o.tags ?? []).join(", ")}</td>
                <td>{(o.aliases ?? []).join(", ")}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

export function ObjectPage({ project, objectId, version }: { project: ProjectRef; objectId: string; version: string | null }) {
  const versions = useLoad(
    (signal) =>
      postJson<{ objs: ObjVersion[] }>(
        "/objs/query",
        { project_id: project.projectId, filter: { object_ids: [objectId] }, sort_by: [{ field: "created_at", direction: "desc" }], metadata_only: true, include_tags_and_aliases: true },
        signal,
      ).then((r) => r.objs),
    [project.projectId, objectId],
  );
  const wanted = version ?? "latest";
  const obj = useLoad(
    (signal) => postJson<{ obj: ObjVersion }>("/obj/read", { project_id: project.projectId, object_id: objectId, digest: wanted, include_tags_and_aliases: true }, signal).then((r) => r.obj),
    [project.projectId, objectId, wanted],
  );
  const rowsRef = tableRefOf(obj.data?.val);
  return (
    <div className="page object-page">
      <h2>{objectId}</h2>
      <ErrorBox error={versions.error ?? obj.error} />
      <div className="object-layout">
        <Section title="Versions">
          <ul className="versions">
            {(versions.data ?? []).map((v) => (
              <li key={v.digest} className={obj.data?.digest === v.digest ? "selected" : ""}>
                <Link to={`${project.base}/objects/${seg(objectId)}?version=${seg(v.digest)}`}>v{v.version_index}</Link>{" "}
                <span className="muted small">
                  {formatTime(v.created_at)} {v.digest.slice(0, 10)}
                </span>{" "}
                {(v.aliases ?? []).map((a) => (
                  <span key={`a-${a}`} className="chip alias">
                    {a}
                  </span>
                ))}
                {(v.tags ?? []).map((t) => (
                  <span key={`t-${t}`} className="chip tag">
                    {t}
                  </span>
                ))}
              </li>
            ))}
          </ul>
        </Section>
        <div className="object-value">
          <Loading when={obj.loading} />
          {obj.data && (
            <>
              <p className="muted small">
                v{obj.data.version_index} · {obj.data.leaf_object_class ?? obj.data.base_object_class ?? obj.data.kind} · digest {obj.data.digest}
              </p>
              {rowsRef && (
                <Section title="Rows">
                  <RowsTable project={project} digest={rowsRef} />
                </Section>
              )}
              <Section title="Value">
                <JsonView value={obj.data.val} projectId={project.projectId} />
              </Section>
            </>
          )}
        </div>
      </div>
    </div>
  );
}

/** A dataset's `rows` (a table ref) → the table's digest. */
function tableRefOf(val: Json | undefined): string | null {
  if (!val || typeof val !== "object" || Array.isArray(val)) return null;
  const rows = val.rows;
  if (typeof rows !== "string") return null;
  const ref = parseRef(rows);
  return ref?.kind === "table" ? ref.name : null;
}

export function TablePage({ project, digest }: { project: ProjectRef; digest: string }) {
  return (
    <div className="page">
      <h2>
        Table <span className="mono">{digest.slice(0, 16)}</span>
      </h2>
      <RowsTable project={project} digest={digest} />
    </div>
  );
}

function RowsTable({ project, digest }: { project: ProjectRef; digest: string }) {
  const stats = useLoad((signal) => postJson<{ count: number }>("/table/query_stats", { project_id: project.projectId, digest }, signal), [project.projectId, digest]);
  const rows = usePaged(({ offset, limit }, signal) => postJson<{ rows: TableRow[] }>("/table/query", { project_id: project.projectId, digest, limit, offset }, signal), [project.projectId, digest], {
    size: TABLE_PAGE,
  });
  const list = rows.rows;
  const columns = [...new Set(list.flatMap((r) => (r.val && typeof r.val === "object" && !Array.isArray(r.val) ? Object.keys(r.val) : ["value"])))];
  const count = stats.data?.count ?? null;
  return (
    <div className="rows-table">
      <ErrorBox error={rows.error ?? stats.error} />
      <PageControls paged={rows} total={count} />
      <Loading when={rows.loading} />
      <table className="plain" aria-label="Rows">
        <thead>
          <tr>
            <th>#</th>
            {columns.map((c) => (
              <th key={c}>{c}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {list.map((r) => (
            <tr key={`${r.original_index}-${r.digest}`}>
              <td className="muted">{r.original_index}</td>
              {columns.map((c) => (
                <td key={c}>
                  <JsonView value={r.val && typeof r.val === "object" && !Array.isArray(r.val) ? r.val[c] : r.val} projectId={project.projectId} openDepth={0} />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
