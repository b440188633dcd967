import { createContext, useContext, type ReactNode } from "react";
import { getJson } from "./api";
import { ErrorBox, Loading } from "./components/common";
import { useLoad, type Loaded } from "./hooks";
import type { Me, Role } from "./types";

/**
 * Who the logged-in key is (`GET /auth/me`), loaded once by the shell: the settings pages and
 * their links are shown only to admins of the entity. The API decides; this only hides what
 * the key could not use.
 */
const MeContext = createContext<Loaded<Me> | null>(null);

export function MeProvider({ children }: { children: ReactNode }) {
  const me = useLoad((signal) => getJson<Me>("/auth/me", signal), []);
  return <MeContext.Provider value={me}>{children}</MeContext.Provider>;
}

export function roleIn(me: Me, entity: string): Role | null {
  return me.roles[entity] ?? me.all_entities;
}

/** Whether the key is an admin of `entity`; undefined while that is not known yet. */
export function useIsAdmin(entity: string): boolean | undefined {
  const me = useContext(MeContext);
  if (!me?.data) return me?.loading ? undefined : false;
  return roleIn(me.data, entity) === "admin";
}

/** The entities whose admin the key is, among `known` and those it has a role in by name. */
export function useAdminEntities(known: readonly string[]): string[] {
  const me = useContext(MeContext)?.data;
  if (!me) return [];
  const entities = new Set([...known, ...Object.keys(me.roles)]);
  return [...entities].filter((e) => roleIn(me, e) === "admin").sort();
}

/** `children` for an admin of `entity`, else a notice (the API would refuse the calls anyway). */
export function AdminsOnly({ entity, children }: { entity: string; children: ReactNode }) {
  const me = useContext(MeContext);
  const admin = useIsAdmin(entity);
  if (admin === undefined) return <Loading when />;
  if (!admin)
    return (
      <>
        <ErrorBox error={me?.error ? `Could not tell this key's role: ${me.error}` : null} />
        <p className="admins-only">
          These settings are for admins only: this key is not an admin of <b>{entity}</b>.
        </p>
      </>
    );
  return <>{children}</>;
}
