/**
 * What an API key may do in an entity, from least to most: `viewer` reads; `writer` also
 * writes traces, objects, feedback, evaluations and training; `admin` also manages keys and
 * project settings and deletes projects' data. Each role includes the ones before it.
 */
export const ROLES = ["viewer", "writer", "admin"] as const;
export type Role = (typeof ROLES)[number];

/** Whether a key holding `held` may do what needs `needed`. */
export function roleCovers(held: Role, needed: Role): boolean {
  return ROLES.indexOf(held) >= ROLES.indexOf(needed);
}
