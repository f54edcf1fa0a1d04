import { lazy, Suspense, type ReactNode } from "react";
import { Route, Routes } from "react-router";

import type { Role } from "./api/types";
import { RequireRole } from "./auth";
import { Layout } from "./components/Layout";
import { Loading } from "./components/States";
import { LoginPage } from "./pages/Login";

// Pages load on demand, so the first paint carries only what it shows.
const SubmitPage = lazy(() => import("./pages/Submit"));
const RunsPage = lazy(() => import("./pages/Runs"));
const ComparePage = lazy(() => import("./pages/Compare"));
const LiveRunPage = lazy(() => import("./pages/LiveRun"));
const LabelPage = lazy(() => import("./pages/Label"));
const TrainingPage = lazy(() => import("./pages/Training"));
const EvaluationPage = lazy(() => import("./pages/Evaluation"));
const PoolsPage = lazy(() => import("./pages/Pools"));

function Page({ role, children }: { role: Role; children: ReactNode }) {
  return (
    <RequireRole role={role}>
      <Suspense fallback={<Loading what="Loading the page" />}>{children}</Suspense>
    </RequireRole>
  );
}

export function App() {
  return (
    <Routes>
      <Route element={<Layout />}>
        <Route path="/login" element={<LoginPage />} />
        <Route path="/" element={<Page role="viewer"><SubmitPage /></Page>} />
        <Route path="/runs" element={<Page role="viewer"><RunsPage /></Page>} />
        <Route path="/runs/compare" element={<Page role="viewer"><ComparePage /></Page>} />
        <Route path="/runs/:runId" element={<Page role="viewer"><LiveRunPage /></Page>} />
        <Route path="/label" element={<Page role="labeler"><LabelPage /></Page>} />
        <Route path="/training" element={<Page role="researcher"><TrainingPage /></Page>} />
        <Route path="/evaluation" element={<Page role="researcher"><EvaluationPage /></Page>} />
        <Route path="/pools" element={<Page role="viewer"><PoolsPage /></Page>} />
        <Route
          path="*"
          element={
            <div className="pad">
              <h1>Not found</h1>
              <p>
                There is no page here. Go to <a href="/">Submit</a> or <a href="/runs">Runs</a>.
              </p>
            </div>
          }
        />
      </Route>
    </Routes>
  );
}
