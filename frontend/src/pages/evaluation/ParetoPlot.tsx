// The Pareto plot: each method's accuracy against its cost per query (log scale), with a
// legend that shows or hides a method.
import { useState } from "react";
import { CartesianGrid, ResponsiveContainer, Scatter, ScatterChart, Tooltip, XAxis, YAxis, ZAxis } from "recharts";

import { pct } from "../../lib/format";
import {
  accuracyDomain,
  formatKnob,
  LEARNED,
  logDomain,
  logTicks,
  paretoSeries,
  singlePairPoints,
  usdPerQuery,
  type EvaluationReport,
  type ParetoPoint,
} from "../../lib/pareto";
import { colour } from "./colours";

function PointTip({ active, payload }: { active?: boolean; payload?: { payload: ParetoPoint }[] }) {
  if (!active || !payload?.length) return null;
  const p = payload[0].payload;
  return (
    <div className="pareto-tip">
      <b>{p.method}</b>
      {p.knob !== null && <span> {formatKnob(p.method, p.knob)}</span>}
      <div>
        {pct(p.accuracy)} at {usdPerQuery(p.cost)}/query
      </div>
    </div>
  );
}

export function ParetoPlot({ report }: { report: EvaluationReport }) {
  const series = paretoSeries(report);
  const singles = singlePairPoints(report);
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const [showSingles, setShowSingles] = useState(true);
  const visible = series.filter((s) => !hidden.has(s.method));
  const shown = [...visible.flatMap((s) => s.points), ...(showSingles ? singles : [])];
  const xDomain = logDomain(shown.map((p) => p.cost));
  const yDomain = accuracyDomain(shown.map((p) => p.accuracy));
  const offPlot = series.filter((s) => s.hidden > 0);
  const toggle = (method: string) =>
    setHidden((now) => {
      const next = new Set(now);
      if (next.has(method)) next.delete(method);
      else next.add(method);
      return next;
    });
  return (
    <section className="panel" data-testid="pareto-plot" aria-label="Pareto plot">
      <h2>Accuracy against cost</h2>
      <p className="muted small">
        Macro pass@1 against $/query (log scale). The learned policy is drawn at each λ it was evaluated at; a baseline
        with a knob is drawn at each of its values. Grey dots: always calling one model.
      </p>
      <div className="pareto-chart">
        {xDomain === null ? (
          <p className="muted">No point has a cost above $0, so there is nothing to place on a log axis.</p>
        ) : (
          <ResponsiveContainer width="100%" height="100%">
            <ScatterChart margin={{ top: 10, right: 16, bottom: 24, left: 8 }}>
              <CartesianGrid strokeDasharray="3 3" />
              <XAxis
                type="number"
                dataKey="cost"
                scale="log"
                domain={xDomain}
                ticks={logTicks(xDomain)}
                allowDataOverflow
                tickFormatter={(v: number) => usdPerQuery(v)}
                label={{ value: "$ / query (log)", position: "insideBottom", offset: -14 }}
              />
              <YAxis
                type="number"
                dataKey="accuracy"
                domain={yDomain}
                tickFormatter={(v: number) => pct(v, 0)}
                label={{ value: "macro pass@1", angle: -90, position: "insideLeft", offset: 10 }}
                width={64}
              />
              <ZAxis range={[36, 36]} />
              <Tooltip content={<PointTip />} />
              {showSingles && (
                <Scatter
                  name="single pairs"
                  data={singles}
                  fill="#b8c0cc"
                  className="pareto-singles"
                  isAnimationActive={false}
                />
              )}
              {visible.map((s) => (
                <Scatter
                  key={s.method}
                  name={s.method}
                  data={s.points}
                  fill={colour(s.method)}
                  line={s.line ? { stroke: colour(s.method), strokeWidth: s.method === LEARNED ? 3 : 1.5 } : false}
                  shape={s.method === LEARNED ? "circle" : "diamond"}
                  className={`pareto-series-${s.method}`}
                  isAnimationActive={false}
                />
              ))}
            </ScatterChart>
          </ResponsiveContainer>
        )}
      </div>
      <ul className="pareto-legend" aria-label="Methods on the plot (press to show or hide)">
        {series.map((s) => (
          <li key={s.method} data-testid="pareto-series" data-method={s.method} data-points={s.points.length}>
            <button type="button" aria-pressed={!hidden.has(s.method)} onClick={() => toggle(s.method)}>
              <span className="swatch" style={{ background: colour(s.method) }} aria-hidden />
              {s.method}
              <span className="muted small">
                {" "}
                {s.points.length} {s.points.length === 1 ? "point" : "points"}
              </span>
            </button>
          </li>
        ))}
        {singles.length > 0 && (
          <li>
            <button type="button" aria-pressed={showSingles} onClick={() => setShowSingles((v) => !v)}>
              <span className="swatch" style={{ background: "#b8c0cc" }} aria-hidden />
              single models <span className="muted small">{singles.length}</span>
            </button>
          </li>
        )}
      </ul>
      {offPlot.length > 0 && (
        <p className="muted small">
          Not on the log axis (cost $0): {offPlot.map((s) => `${s.method} (${s.hidden})`).join(", ")}.
        </p>
      )}
    </section>
  );
}
