import { useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Navigate, useNavigate, useSearchParams } from "react-router";

import { api, ensureCsrf } from "../api/client";
import { keys } from "../api/queryKeys";
import type { Me } from "../api/types";
import { useMeQuery } from "../auth";
import { ErrorText } from "../components/States";

/** Only paths on this site: `next` must not send anyone elsewhere. */
function safeNext(next: string | null): string {
  return next && next.startsWith("/") && !next.startsWith("//") ? next : "/";
}

export function LoginPage() {
  const [params] = useSearchParams();
  const next = safeNext(params.get("next"));
  const me = useMeQuery();
  const client = useQueryClient();
  const navigate = useNavigate();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  if (me.data) return <Navigate to={next} replace />;

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await ensureCsrf(true);
      const user = await api<Me>("/api/auth/login", { method: "POST", body: { username, password } });
      await ensureCsrf(true); // login rotates the token
      client.setQueryData(keys.me, user);
      void navigate(next, { replace: true });
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="login">
      <h1>Sign in</h1>
      <form onSubmit={(event) => void submit(event)} className="stack">
        <label>
          Username
          <input autoComplete="username" value={username} onChange={(e) => setUsername(e.target.value)} required />
        </label>
        <label>
          Password
          <input
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            required
          />
        </label>
        <ErrorText error={error} />
        <button type="submit" className="primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <p className="muted small">
        Scripts use API tokens instead (<a href="/api/docs">API docs</a>). Admins also have the{" "}
        <a href="/admin/">Django admin</a>.
      </p>
    </div>
  );
}
