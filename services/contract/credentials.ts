/**
 * The `Authorization` header's credentials. `Basic base64(<user>:<secret>)`: the secret is
 * the API key; the user part is ignored by the API (clients send `api`), except where an
 * operation reads a project from it (Langfuse's exporter sends `<public key>:<secret key>`,
 * and our public key names the project). `Bearer <key>`: the key, no user.
 */
export interface Credentials {
  readonly user: string | null;
  readonly secret: string;
}

export function credentials(header: string | undefined): Credentials | null {
  if (!header) return null;
  const [scheme, value] = header.split(" ", 2);
  if (!value) return null;
  if (scheme?.toLowerCase() === "bearer") return { user: null, secret: value.trim() };
  if (scheme?.toLowerCase() !== "basic") return null;
  const decoded = Buffer.from(value.trim(), "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon < 0 ? null : { user: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}
