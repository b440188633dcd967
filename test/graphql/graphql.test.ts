import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basic, KEY_ACME, KEY_ADMIN, KEY_OTHER, startTestService, waitStored } from "../support/service.js";

/**
 * The GraphQL documents the Weave Python SDK sends at `weave.init`, as graphql-core's
 * print_ast re-prints them (the interface spec beside this repository, shared/spec/weave-python-sdk.md §2): JSON body, no `operationName`,
 * `variables` left out when there are none.
 */
const DEFAULT_ENTITY = `query DefaultEntity {
  viewer {
    username
    defaultEntity {
      name
    }
  }
}`;

const PROJECT = `query Project($name: String!, $entityName: String!) {
  project(name: $name, entityName: $entityName) {
    name
  }
}`;

const UPSERT_MODEL = `mutation UpsertModel($name: String!, $id: String, $entity: String!, $description: String, $repo: String) {
  upsertModel(
    input: {id: $id, name: $name, entityName: $entity, description: $description, repo: $repo}
  ) {
    model {
      name
      description
    }
  }
}`;

describe("POST /graphql (the W&B subset the Weave SDK uses)", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;

  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => {
    await service.stop();
  });

  const gql = async (body: unknown, key = KEY_ACME, contentType: string | null = "application/json") => {
    const headers: Record<string, string> = { authorization: basic(key) };
    if (contentType) headers["content-type"] = contentType;
    const res = await fetch(`${service.url}/graphql`, { method: "POST", headers, body: JSON.stringify(body) });
    return { status: res.status, type: res.headers.get("content-type"), body: (await res.json()) as Record<string, unknown> };
  };

  it("answers DefaultEntity with the key's user and first entity", async () => {
    expect(await gql({ query: DEFAULT_ENTITY })).toEqual({
      status: 200,
      type: expect.stringContaining("application/json"),
      body: { data: { viewer: { username: "alice", defaultEntity: { name: "acme" } } } },
    });
    // A key that reaches every entity defaults to its username.
    expect((await gql({ query: DEFAULT_ENTITY }, KEY_ADMIN)).body).toEqual({ data: { viewer: { username: "root", defaultEntity: { name: "root" } } } });
  });

  it("finds no project, creates it with UpsertModel, then finds it (the init sequence)", async () => {
    const lookup = { query: PROJECT, variables: { entityName: "acme", name: "agents-gql" } };
    expect((await gql(lookup)).body).toEqual({ data: { project: null } });
    expect((await gql({ query: UPSERT_MODEL, variables: { name: "agents-gql", entity: "acme", description: null } })).body).toEqual({
      data: { upsertModel: { model: { name: "agents-gql", description: null } } },
    });
    expect((await gql(lookup)).body).toEqual({ data: { project: { name: "agents-gql" } } });
  });

  it("knows a project that received calls, without UpsertModel", async () => {
    const started_at = new Date().toISOString();
    const res = await fetch(`${service.url}/call/start`, {
      method: "POST",
      headers: { authorization: basic(KEY_ACME), "content-type": "application/json" },
      body: JSON.stringify({ start: { project_id: "acme/written", op_name: "op", started_at, attributes: {}, inputs: {} } }),
    });
    expect(res.status).toBe(200);
    // The worker records the project when it stores the call; GraphQL names it inside the query, so it does not wait by itself.
    await waitStored(service.url);
    expect((await gql({ query: PROJECT, variables: { entityName: "acme", name: "written" } })).body).toEqual({ data: { project: { name: "written" } } });
  });

  it("knows a project that only received an object or a table", async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${service.url}${path}`, { method: "POST", headers: { authorization: basic(KEY_ACME), "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await post("/obj/create", { obj: { project_id: "acme/objects-only", object_id: "o", val: { a: 1 } } })).status).toBe(200);
    expect((await post("/table/create", { table: { project_id: "acme/tables-only", rows: [{ a: 1 }] } })).status).toBe(200);
    for (const name of ["objects-only", "tables-only"]) {
      expect((await gql({ query: PROJECT, variables: { entityName: "acme", name } })).body).toEqual({ data: { project: { name } } });
    }
    expect((await gql({ query: PROJECT, variables: { entityName: "acme", name: "nothing-here" } })).body).toEqual({ data: { project: null } });
  });

  it("refuses another entity with PERMISSION_ERROR, creating nothing", async () => {
    const upsert = await gql({ query: UPSERT_MODEL, variables: { name: "theirs", entity: "acme", description: null } }, KEY_OTHER);
    expect(upsert.status).toBe(200);
    expect(upsert.body).toMatchObject({ data: { upsertModel: null }, errors: [{ message: "this key may not reach entity acme", extensions: { code: "PERMISSION_ERROR" } }] });
    const lookup = await gql({ query: PROJECT, variables: { entityName: "acme", name: "theirs" } }, KEY_OTHER);
    expect(lookup.body).toMatchObject({ data: { project: null }, errors: [{ extensions: { code: "PERMISSION_ERROR" } }] });
    expect((await gql({ query: PROJECT, variables: { entityName: "acme", name: "theirs" } })).body).toEqual({ data: { project: null } });
  });

  it("parses the body as JSON whatever the Content-Type says, or none", async () => {
    expect((await gql({ query: DEFAULT_ENTITY }, KEY_ACME, null)).body).toMatchObject({ data: { viewer: { username: "alice" } } });
    expect((await gql({ query: DEFAULT_ENTITY }, KEY_ACME, "text/plain")).body).toMatchObject({ data: { viewer: { username: "alice" } } });
  });

  it("answers any other document with GraphQL errors in the standard shape, never a 404 page", async () => {
    const unknown = await gql({ query: "query ServerInfo { serverInfo { frontendHost } }" });
    expect(unknown.status).toBe(200);
    expect(unknown.body).toEqual({ errors: [expect.objectContaining({ message: 'Cannot query field "serverInfo" on type "Query".' })] });
    const broken = await gql({ query: "query {" });
    expect(broken.body).toEqual({ errors: [expect.objectContaining({ message: expect.stringContaining("Syntax Error") })] });
    const missingVariable = await gql({ query: PROJECT, variables: { name: "x" } });
    expect(missingVariable.body).toEqual({ errors: [expect.objectContaining({ message: expect.stringContaining("$entityName") })] });
  });

  it("needs a key", async () => {
    const res = await fetch(`${service.url}/graphql`, { method: "POST", body: JSON.stringify({ query: DEFAULT_ENTITY }) });
    expect(res.status).toBe(401);
  });
});
