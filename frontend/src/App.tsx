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
const CollectionsPage = lazy(() => import("./pages/Collections"));
const PoolsPage = lazy(() => import("./pages/Pools"));

function Page({ needs, children }: { needs: Role; children: ReactNode }) {
  return (
    <RequireRole needs={needs}>
      <Suspense fallback={<Loading what="Loading the page" />}>{children}</Suspense>
    </RequireRole>
  );
}

export function App() {
  return (
    <Routes>
      <Route element={<Layout />}>
        <Route path="/login" element={<LoginPage />} />
        <Route
          path="/"
          element={
            <Page needs="viewer">
              <SubmitPage />
            </Page>
          }
        />
        <Route
          path="/runs"
          element={
            <Page needs="viewer">
              <RunsPage />
            </Page>
          }
        />
        <Route
          path="/runs/compare"
          element={
            <Page needs="viewer">
              <ComparePage />
            </Page>
          }
        />
        <Route
          path="/runs/:runId"
          element={
            <Page needs="viewer">
              <LiveRunPage />
            </Page>
          }
        />
        <Route
          path="/label"
          element={
            <Page needs="labeler">
              <LabelPage />
            </Page>
          }
        />
        <Route
          path="/training"
          element={
            <Page needs="researcher">
              <TrainingPage />
            </Page>
          }
        />
        <Route
          path="/evaluation"
          element={
            <Page needs="researcher">
              <EvaluationPage />
            </Page>
          }
        />
        <Route
          path="/collections"
          element={
            <Page needs="researcher">
              <CollectionsPage />
            </Page>
          }
        />
        <Route
          path="/pools"
          element={
            <Page needs="viewer">
              <PoolsPage />
            </Page>
          }
        />
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
