import { NavLink, Outlet, useNavigate } from "react-router";

import { atLeast, useMeQuery, useSignOut } from "../auth";
import type { Role } from "../api/types";

const LINKS: { to: string; label: string; role: Role }[] = [
  { to: "/", label: "Submit", role: "viewer" },
  { to: "/runs", label: "Runs", role: "viewer" },
  { to: "/label", label: "Label", role: "labeler" },
  { to: "/training", label: "Training", role: "researcher" },
  { to: "/evaluation", label: "Evaluation", role: "researcher" },
  { to: "/collections", label: "Collections", role: "researcher" },
  { to: "/pools", label: "Pools", role: "viewer" },
];

export function Layout() {
  const me = useMeQuery();
  const signOut = useSignOut();
  const navigate = useNavigate();
  const user = me.data ?? null;
  return (
    <div className="app">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <NavLink to="/" className="brand" aria-label="Orchestra Studio home">
          <span aria-hidden="true">◆</span> Orchestra Studio
        </NavLink>
        {user && (
          <nav aria-label="Main">
            {LINKS.filter((link) => atLeast(user, link.role)).map((link) => (
              <NavLink key={link.to} to={link.to} end={link.to === "/"}>
                {link.label}
              </NavLink>
            ))}
          </nav>
        )}
        {user && (
          <div className="who">
            <span title={`role: ${user.role}`}>
              {user.username} <span className="badge">{user.role}</span>
            </span>
            <button type="button" className="link" onClick={() => void signOut().then(() => navigate("/login"))}>
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
    </div>
  );
}
