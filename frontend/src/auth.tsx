import { useQuery, useQueryClient } from "@tanstack/react-query";
import { createContext, useContext, type ReactNode } from "react";
import { Link, Navigate, useLocation } from "react-router";

import { ApiError, api } from "./api/client";
import { keys } from "./api/queryKeys";
import type { Me, Role } from "./api/types";

const LADDER: Role[] = ["viewer", "labeler", "researcher", "admin"];

/** Roles form a ladder: each may do all that the ones below it may. */
export function atLeast(user: Me | null | undefined, role: Role): boolean {
  if (!user) return false;
  return LADDER.indexOf(user.role as Role) >= LADDER.indexOf(role);
}

const MeContext = createContext<Me | null>(null);

export function useMe(): Me {
  const me = useContext(MeContext);
  if (!me) throw new Error("useMe outside a signed-in page");
  return me;
}

export function useMeQuery() {
  return useQuery<Me | null>({
    queryKey: keys.me,
    queryFn: async () => {
      try {
        return await api<Me>("/api/auth/me");
      } catch (error) {
        if (error instanceof ApiError && (error.status === 401 || error.status === 403)) return null;
        throw error;
      }
    },
    staleTime: 60_000,
  });
}

export function useSignOut() {
  const client = useQueryClient();
  return async () => {
    await api("/api/auth/logout", { method: "POST" });
    client.clear();
    client.setQueryData(keys.me, null);
  };
}

/** Signed-in pages: sends strangers to /login (and back afterwards), and hides pages above the role (`needs`). */
export function RequireRole({ needs, children }: { needs: Role; children: ReactNode }) {
  const me = useMeQuery();
  const location = useLocation();
  if (me.isPending) return <p className="muted pad">Loading…</p>;
  if (me.isError) return <p className="error pad">{me.error.message}</p>;
  if (!me.data)
    return <Navigate to={`/login?next=${encodeURIComponent(location.pathname + location.search)}`} replace />;
  if (!atLeast(me.data, needs))
    return (
      <div className="pad" data-testid="role-gate" data-needs={needs}>
        <h1>Not open to your role</h1>
        <p>
          This page needs the <b>{needs}</b> role or above; you are a <b>{me.data.role}</b>. Ask an admin for it, or go
          back to <Link to="/">Submit</Link>.
        </p>
      </div>
    );
  return <MeContext.Provider value={me.data}>{children}</MeContext.Provider>;
}
