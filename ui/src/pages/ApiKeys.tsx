import { useState, type FormEvent } from "react";
import { AdminsOnly } from "../access";
import { deleteJson, getJson, postJson } from "../api";
import { ErrorBox, Loading, Section } from "../components/common";
import { formatTime } from "../format";
import { useAction, useLoad } from "../hooks";
import type { ApiKey, NewApiKey, Role } from "../types";

/** Each role in the API's order, with what it may do (services/keyRoles.ts). */
const ROLE_SAYS: Record<Role, string> = {
  viewer: "reads",
  writer: "reads, and writes traces, objects, feedback, evaluations, training",
  admin: "also manages keys and project settings",
};

/** An entity's settings, for its admins: its API keys (make one, list them, revoke one). */
export function EntitySettingsPage({ entity }: { entity: string }) {
  return (
    <div className="page settings">
      <h2>Settings of {entity}</h2>
      <AdminsOnly entity={entity}>
        <ApiKeys entity={entity} />
      </AdminsOnly>
    </div>
  );
}

function ApiKeys({ entity }: { entity: string }) {
  const keys = useLoad((signal) => getJson<{ keys: ApiKey[] }>(`/admin/keys?entity=${encodeURIComponent(entity)}`, signal), [entity]);
  const [created, setCreated] = useState<NewApiKey | null>(null);
  const list = keys.data?.keys ?? [];
  return (
    <>
      <Section title="New API key">
        <NewKeyForm
          entity={entity}
          onCreated={(key) => {
            setCreated(key);
            keys.reload();
          }}
        />
        {created && <NewKeySecret created={created} onDone={() => setCreated(null)} />}
      </Section>
      <Section title="API keys">
        <ErrorBox error={keys.error} />
        <Loading when={keys.loading && !keys.data} />
        {keys.data && list.length === 0 && <p className="muted">No key made here yet (keys from the server's AUTH_KEYS are not listed).</p>}
        {list.length > 0 && (
          <table className="plain api-keys">
            <thead>
              <tr>
                <th>Name</th>
                <th>Role</th>
                <th>Made</th>
                <th>Last used</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.map((k) => (
                <tr key={k.id} data-key-id={k.id}>
                  <td>{k.name}</td>
                  <td>{k.role}</td>
                  <td>{formatTime(k.created_at)}</td>
                  <td>{k.last_used_at ? formatTime(k.last_used_at) : <span className="muted">never</span>}</td>
                  <td>
                    <RevokeKey apiKey={k} onRevoked={keys.reload} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
    </>
  );
}

function NewKeyForm({ entity, onCreated }: { entity: string; onCreated: (key: NewApiKey) => void }) {
  const [name, setName] = useState("");
  const [role, setRole] = useState<Role>("viewer");
  const { run: create, busy, error } = useAction(async () => {
    onCreated(await postJson<NewApiKey>("/admin/keys", { entity, role, name: name.trim() }));
    setName("");
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void create();
  };
  return (
    <>
      <form className="settings-form" onSubmit={submit}>
        <label>
          Name <input name="keyName" value={name} onChange={(e) => setName(e.target.value)} placeholder="e.g. dashboard" required />
        </label>
        <label>
          Role{" "}
          <select name="keyRole" value={role} onChange={(e) => setRole(e.target.value as Role)}>
            {Object.entries(ROLE_SAYS).map(([r, says]) => (
              <option key={r} value={r}>
                {r}: {says}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="primary" disabled={busy || name.trim() === ""}>
          Make key
        </button>
      </form>
      <ErrorBox error={error} />
    </>
  );
}

/** The new key's secret: the API shows it this once and keeps only its hash. */
function NewKeySecret({ created, onDone }: { created: NewApiKey; onDone: () => void }) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = () =>
    navigator.clipboard.writeText(created.key).then(
      () => setCopied("Copied."),
      () => setCopied("Copying was refused here: select the key and copy it by hand."),
    );
  return (
    <div className="new-key" role="status">
      <p>
        Key <b>{created.name}</b> ({created.role} of {created.entity}). Copy it now: it is shown only this once, and cannot be read back later.
      </p>
      <code className="new-key-secret">{created.key}</code>
      <div className="new-key-actions">
        <button onClick={() => void copy()}>Copy</button>
        <button onClick={onDone}>Done</button>
        {copied && <span className="muted">{copied}</span>}
      </div>
      <p className="muted small">Use it as the password of HTTP Basic, username "api", like any key.</p>
    </div>
  );
}

function RevokeKey({ apiKey, onRevoked }: { apiKey: ApiKey; onRevoked: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const { run: revoke, busy, error } = useAction(async () => {
    await deleteJson<Record<string, never>>(`/admin/keys/${encodeURIComponent(apiKey.id)}`);
    onRevoked();
  });
  if (!confirming) return <button onClick={() => setConfirming(true)}>Revoke</button>;
  return (
    <span className="revoke-confirm">
      Revoke <b>{apiKey.name}</b>? Requests with it are refused from then on.{" "}
      <button className="danger" disabled={busy} onClick={() => void revoke()}>
        Yes, revoke
      </button>{" "}
      <button disabled={busy} onClick={() => setConfirming(false)}>
        Cancel
      </button>
      {error && <span className="error-inline"> {error}</span>}
    </span>
  );
}
