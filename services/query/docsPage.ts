/** A self-contained reference page rendered from the OpenAPI document (no external assets). */
interface OpenApiDoc {
  info?: { title?: string; version?: string };
  paths?: Record<string, Record<string, { summary?: string; operationId?: string; tags?: string[]; requestBody?: unknown; responses?: unknown }>>;
  components?: { schemas?: Record<string, unknown> };
}

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

export function docsPage(document: object): string {
  const doc = document as OpenApiDoc;
  const rows: string[] = [];
  for (const [path, methods] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(methods)) {
      rows.push(`<details><summary><code>${method.toUpperCase()} ${escapeHtml(path)}</code> — ${escapeHtml(op.summary ?? "")} <small>[${escapeHtml((op.tags ?? []).join(", "))}]</small></summary>
<pre>${escapeHtml(JSON.stringify({ requestBody: op.requestBody, responses: op.responses }, null, 2))}</pre></details>`);
    }
  }
  const schemas = Object.entries(doc.components?.schemas ?? {}).map(
    ([name, schema]) => `<details id="${escapeHtml(name)}"><summary><code>${escapeHtml(name)}</code></summary><pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre></details>`,
  );
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(doc.info?.title ?? "API")}</title>
<style>body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem}details{margin:.3rem 0}pre{background:#f5f5f5;padding:.5rem;overflow:auto}</style>
</head><body><h1>${escapeHtml(doc.info?.title ?? "API")} <small>${escapeHtml(doc.info?.version ?? "")}</small></h1>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a>. Authentication: HTTP Basic, username <code>api</code>, password = API key.</p>
<h2>Operations</h2>${rows.join("\n")}<h2>Schemas</h2>${schemas.join("\n")}</body></html>`;
}
