import { useEffect, useState } from "react";
import { postJson, request, errorMessage } from "../api";
import { Link, seg } from "../router";
import type { Json, JsonObject } from "../types";

/**
 * JSON as a collapsible tree. Long strings are cut with an "expand"; base64 data URIs of
 * images and image objects (a PIL image as the Weave clients save it) are shown as images;
 * `weave:///` refs are links to what they name, and can be read in place.
 */
const LONG_STRING = 300;
const SHOWN_CHILDREN = 100;

export function JsonView({ value, projectId, openDepth = 2 }: { value: Json | undefined; projectId: string; openDepth?: number }) {
  if (value === undefined) return <span className="muted">none</span>;
  return (
    <div className="json">
      <JsonNode value={value} projectId={projectId} depth={0} openDepth={openDepth} />
    </div>
  );
}

const isObject = (v: Json | undefined): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

function JsonNode({ value, projectId, depth, openDepth }: { value: Json; projectId: string; depth: number; openDepth: number }) {
  if (value === null) return <span className="j-null">null</span>;
  if (typeof value === "boolean") return <span className="j-bool">{String(value)}</span>;
  if (typeof value === "number") return <span className="j-num">{value}</span>;
  if (typeof value === "string") return <JsonString value={value} projectId={projectId} />;
  if (isObject(value) && imageFileDigest(value)) return <FileImage projectId={projectId} file={imageFileDigest(value)!} />;
  return <JsonBranch value={value} projectId={projectId} depth={depth} openDepth={openDepth} />;
}

function JsonBranch({ value, projectId, depth, openDepth }: { value: Json[] | JsonObject; projectId: string; depth: number; openDepth: number }) {
  const entries: [string, Json][] = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const [open, setOpen] = useState(depth < openDepth && entries.length <= 200);
  const [shown, setShown] = useState(SHOWN_CHILDREN);
  const [left, right] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  if (entries.length === 0) return <span className="j-punct">{left + right}</span>;
  return (
    <span>
      <button className="j-toggle" onClick={() => setOpen(!open)} aria-expanded={open}>
        {open ? "▾" : "▸"} {left}
        {!open && <span className="muted"> {entries.length} {Array.isArray(value) ? "items" : "keys"} </span>}
        {!open && right}
      </button>
      {open && (
        <>
          <div className="j-children">
            {entries.slice(0, shown).map(([k, v]) => (
              <div key={k} className="j-entry">
                <span className="j-key">{k}</span>: <JsonNode value={v} projectId={projectId} depth={depth + 1} openDepth={openDepth} />
              </div>
            ))}
            {entries.length > shown && (
              <button className="link" onClick={() => setShown(shown + SHOWN_CHILDREN * 10)}>
                show more ({entries.length - shown} left)
              </button>
            )}
          </div>
          <span className="j-punct">{right}</span>
        </>
      )}
    </span>
  );
}

export function LongText({ text, limit = LONG_STRING, className }: { text: string; limit?: number; className?: string }) {
  const [full, setFull] = useState(false);
  if (text.length <= limit || full) return <span className={className}>{text}</span>;
  return (
    <span className={className}>
      {text.slice(0, limit)}…{" "}
      <button className="link" onClick={() => setFull(true)}>
        expand ({text.length.toLocaleString("en-US")} chars)
      </button>
    </span>
  );
}

const DATA_IMAGE = /^data:image\/(png|jpe?g|gif|webp|svg\+xml);base64,/;

function JsonString({ value, projectId }: { value: string; projectId: string }) {
  if (DATA_IMAGE.test(value)) return <img className="j-image" src={value} alt="image from the data" />;
  if (value.startsWith("weave:///")) return <RefValue refUri={value} projectId={projectId} />;
  return (
    <span className="j-str">
      "<LongText text={value} />"
    </span>
  );
}

interface ParsedRef {
  entity: string;
  project: string;
  kind: string;
  name: string;
  version: string | null;
}

export function parseRef(ref: string): ParsedRef | null {
  const m = /^weave:\/\/\/([^/]+)\/([^/]+)\/([^/]+)\/([^/]+)/.exec(ref);
  if (!m) return null;
  const [, entity, project, kind, rest] = m as unknown as [string, string, string, string, string];
  const colon = rest.indexOf(":");
  return { entity, project, kind, name: colon < 0 ? rest : rest.slice(0, colon), version: colon < 0 ? null : rest.slice(colon + 1) };
}

/** The UI page a ref names, when there is one. */
export function refPage(ref: string): string | null {
  const r = parseRef(ref);
  if (!r) return null;
  const base = `/${seg(r.entity)}/${seg(r.project)}`;
  if (r.kind === "call") return `${base}/calls/${seg(r.name)}`;
  if (r.kind === "table") return `${base}/tables/${seg(r.name)}`;
  if (r.kind === "object" || r.kind === "op") return `${base}/objects/${seg(decodeURIComponent(r.name))}${r.version ? `?version=${seg(r.version)}` : ""}`;
  return null;
}

/** The object id `weave.publish` gives an unnamed PIL image: refs to it are read at once, to show the image. */
const IMAGE_OBJECT_ID = "Image";

function RefValue({ refUri, projectId }: { refUri: string; projectId: string }) {
  const [state, setState] = useState<{ value?: Json; error?: string; loading?: boolean } | null>(null);
  const page = refPage(refUri);
  const read = () => {
    setState({ loading: true });
    postJson<{ vals: Json[] }>("/refs/read_batch", { refs: [refUri] }).then(
      (res) => setState({ value: res.vals[0] ?? null }),
      (err: unknown) => setState({ error: errorMessage(err) }),
    );
  };
  const parsed = parseRef(refUri);
  const isImage = parsed?.kind === "object" && parsed.name === IMAGE_OBJECT_ID;
  useEffect(() => {
    if (isImage) read();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [refUri, isImage]);
  return (
    <span className="j-ref">
      {page ? <Link to={page}>{refUri}</Link> : <span>{refUri}</span>}{" "}
      {state === null && (
        <button className="link" onClick={read}>
          show value
        </button>
      )}
      {state?.loading && <span className="muted">reading…</span>}
      {state?.error && <span className="error-inline">{state.error}</span>}
      {state && "value" in state && state.value !== undefined && (
        <div className="j-children">
          <JsonNode value={state.value} projectId={projectId} depth={0} openDepth={1} />
        </div>
      )}
    </span>
  );
}

/** `{_type: "CustomWeaveType", weave_type: {type: "PIL.Image.Image"}, files: {"image.png": digest}}` → its file. */
function imageFileDigest(value: JsonObject): { name: string; digest: string } | null {
  if (value._type !== "CustomWeaveType") return null;
  const type = value.weave_type;
  if (!isObject(type) || type.type !== "PIL.Image.Image") return null;
  const files = value.files;
  if (!isObject(files)) return null;
  const [name, digest] = Object.entries(files)[0] ?? [];
  return name && typeof digest === "string" ? { name, digest } : null;
}

function FileImage({ projectId, file }: { projectId: string; file: { name: string; digest: string } }) {
  const [url, setUrl] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let objectUrl: string | null = null;
    const ctl = new AbortController();
    request("/file/content", { body: { project_id: projectId, digest: file.digest }, signal: ctl.signal })
      .then((res) => res.blob())
      .then((blob) => {
        objectUrl = URL.createObjectURL(blob);
        setUrl(objectUrl);
      })
      .catch((err: unknown) => setError(errorMessage(err)));
    return () => {
      ctl.abort();
      if (objectUrl) URL.revokeObjectURL(objectUrl);
    };
  }, [projectId, file.digest]);
  if (error) return <span className="error-inline">image {file.name}: {error}</span>;
  return url ? <img className="j-image" src={url} alt={file.name} /> : <span className="muted">loading image…</span>;
}
