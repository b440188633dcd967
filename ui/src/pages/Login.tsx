import { useState, type FormEvent } from "react";
import { apiKey, errorMessage, request } from "../api";
import { ErrorBox } from "../components/common";
import { useAction } from "../hooks";

export function LoginPage({ onLogin, expired }: { onLogin: () => void; expired: boolean }) {
  const [key, setKey] = useState("");
  const { run: logIn, busy, error } = useAction(
    async () => {
      await request("/projects", { key: key.trim() });
      apiKey.set(key.trim());
      onLogin();
    },
    (err) => `The service refused this key: ${errorMessage(err)}`,
    expired ? "Your key was refused or forgotten: log in again." : null,
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void logIn();
  };
  return (
    <div className="login">
      <form onSubmit={submit}>
        <h1>tracehouse</h1>
        <label>
          API key
          <input type="password" name="apiKey" autoComplete="current-password" value={key} onChange={(e) => setKey(e.target.value)} autoFocus required />
        </label>
        <button type="submit" disabled={busy || key.trim() === ""}>
          Log in
        </button>
        <ErrorBox error={error} />
        <p className="muted small">
          The key is kept for this browser tab only (session storage) and sent with every request to the API. On a local start without <code>AUTH_KEYS</code>,{" "}
          <code>make start</code> prints the generated key the first time and keeps it in <code>DATA_DIR/local-api-key.json</code> (<code>./data</code> by default).
        </p>
      </form>
    </div>
  );
}
