/**
 * The service's one router: routes are a method and a path template in the contract's
 * OpenAPI form (`/objs/{object_id}/versions`, and `{*rest}` for the rest of a path, slashes
 * included, possibly empty). A path
 * without parameters is found by one Map lookup; every other path is tried against the
 * templates in the order they were added, the first match winning.
 *
 * Matching keeps what clients saw when Express's router answered: paths match regardless of
 * case and with or without one trailing slash, a HEAD is answered by the GET route, a
 * parameter is one segment decoded with decodeURIComponent, and a broken %-escape in a
 * matched parameter is a 400 (`Failed to decode param '…'`), whatever the method.
 */

export interface Match<T> {
  readonly route: T;
  readonly params: Record<string, string>;
}

interface Template<T> {
  readonly method: string;
  readonly pattern: RegExp;
  /** Parameter names in order; a wildcard's value keeps its slashes. */
  readonly keys: readonly { readonly name: string; readonly wildcard: boolean }[];
  readonly route: T;
}

const PARAMETER = /\{(\*?)([A-Za-z_][A-Za-z0-9_]*)\}/g;

export class Router<T> {
  /** Routes of paths without parameters, by `METHOD /path` exactly as declared. */
  private readonly exact = new Map<string, T>();
  /** Every route, parameters or not, for paths that differ from the declared one (case, trailing slash). */
  private readonly templates: Template<T>[] = [];

  /** Adds a route; of two routes for the same method and path, the first added wins. */
  add(method: string, template: string, route: T): void {
    const upper = method.toUpperCase();
    if (!template.includes("{")) {
      const key = `${upper} ${template}`;
      if (!this.exact.has(key)) this.exact.set(key, route);
    }
    this.templates.push({ method: upper, ...compile(template), route });
  }

  /** The route for a request's method and path (the URL's path, before any `?`), or null. */
  find(method: string, path: string): Match<T> | null {
    const exact = this.exact.get(`${method} ${path}`) ?? (method === "HEAD" ? this.exact.get(`GET ${path}`) : undefined);
    if (exact !== undefined) return { route: exact, params: {} };
    for (const template of this.templates) {
      const found = template.pattern.exec(path);
      if (!found) continue;
      // Decoded before the method is checked: a broken escape is refused on any route it reaches.
      const params = decodeParams(template, found);
      if (template.method === method || (method === "HEAD" && template.method === "GET")) return { route: template.route, params };
    }
    return null;
  }
}

function compile(template: string): Pick<Template<unknown>, "pattern" | "keys"> {
  const keys: { name: string; wildcard: boolean }[] = [];
  let source = "";
  let at = 0;
  const trimmed = template.length > 1 ? template.replace(/\/$/, "") : template;
  for (const found of trimmed.matchAll(PARAMETER)) {
    source += escapeText(trimmed.slice(at, found.index));
    const wildcard = found[1] === "*";
    source += wildcard ? "([^]*)" : "([^/]+)";
    keys.push({ name: found[2]!, wildcard });
    at = found.index + found[0].length;
  }
  source += escapeText(trimmed.slice(at));
  return { pattern: new RegExp(`^${source}(?:/$)?$`, "i"), keys };
}

function escapeText(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function decodeParams(template: Template<unknown>, found: RegExpExecArray): Record<string, string> {
  const params: Record<string, string> = {};
  template.keys.forEach((key, i) => {
    const raw = found[i + 1]!;
    params[key.name] = key.wildcard ? raw.split("/").map(decodeParam).join("/") : decodeParam(raw);
  });
  return params;
}

/** A path parameter's value; a broken escape is the client's error (400). */
function decodeParam(raw: string): string {
  if (!raw.includes("%")) return raw;
  try {
    return decodeURIComponent(raw);
  } catch (err) {
    if (!(err instanceof URIError)) throw err;
    throw Object.assign(new URIError(`Failed to decode param '${raw}'`), { status: 400, statusCode: 400 });
  }
}
