// A run's settings: pool, policy, cost preference (a preset or λ), best-of-N and budgets.
import type { ReactNode } from "react";

import type { Options, Pool } from "../../api/types";

export type Preset = "cheap" | "balanced" | "best" | "custom";
const PRESETS: Preset[] = ["cheap", "balanced", "best", "custom"];

export interface Settings {
  poolId: number | null;
  policy: string;
  preset: Preset;
  /** The λ slider's position, 0 to 100 (lambdaAt). */
  slider: number;
  bestOf: number;
  maxCost: string;
  maxNodes: string;
  deadline: string;
}

export const DEFAULT_SETTINGS: Settings = {
  poolId: null,
  policy: "",
  preset: "balanced",
  slider: 40,
  bestOf: 1,
  maxCost: "",
  maxNodes: "",
  deadline: "",
};

/** λ from a slider position: 0 at the left end, then log-spaced up to 2. */
export function lambdaAt(position: number): number {
  if (position <= 0) return 0;
  return Number((0.001 * Math.pow(2000, position / 100)).toPrecision(2));
}

function numberOrNull(text: string): number | null {
  return text.trim() === "" ? null : Number(text);
}

/** The run's part of POST /api/runs. */
export function runBody(settings: Settings, policy: string) {
  return {
    policy,
    ...(settings.preset === "custom" ? { cost_preference: lambdaAt(settings.slider) } : { preset: settings.preset }),
    best_of: settings.bestOf,
    max_cost_usd: numberOrNull(settings.maxCost),
    max_nodes: numberOrNull(settings.maxNodes),
    deadline_s: numberOrNull(settings.deadline),
  };
}

interface Props {
  settings: Settings;
  change: (patch: Partial<Settings>) => void;
  pools: Pool[];
  pool: number | null;
  policy: string;
  options: Options;
  /** The error and the submit button. */
  children: ReactNode;
}

export function RunSettings({ settings, change, pools, pool, policy, options, children }: Props) {
  return (
    <section className="panel stack" aria-label="Run settings">
      <label>
        Pool
        <select value={pool ?? ""} onChange={(e) => change({ poolId: Number(e.target.value) })} data-testid="pool">
          {pools.length === 0 && <option value="">no pools yet</option>}
          {pools.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <label>
        Policy
        <select value={policy} onChange={(e) => change({ policy: e.target.value })}>
          {options.policies.map((p) => (
            <option key={p.name} value={p.name}>
              {p.name}
              {p.needs_checkpoint ? " (trained checkpoint)" : ""}
            </option>
          ))}
        </select>
      </label>
      <CostPreference settings={settings} change={change} presets={options.presets} />
      <div className="row">
        <label>
          Best of N
          <input
            type="number"
            min={1}
            max={16}
            value={settings.bestOf}
            onChange={(e) => change({ bestOf: Number(e.target.value) || 1 })}
          />
        </label>
        <label>
          Budget ($)
          <input
            type="number"
            min={0}
            step="any"
            placeholder="none"
            value={settings.maxCost}
            onChange={(e) => change({ maxCost: e.target.value })}
          />
        </label>
      </div>
      <details>
        <summary>More limits</summary>
        <div className="row">
          <label>
            Max nodes
            <input
              type="number"
              min={1}
              value={settings.maxNodes}
              onChange={(e) => change({ maxNodes: e.target.value })}
            />
          </label>
          <label>
            Deadline (s)
            <input
              type="number"
              min={1}
              value={settings.deadline}
              onChange={(e) => change({ deadline: e.target.value })}
            />
          </label>
        </div>
      </details>
      {children}
    </section>
  );
}

interface CostProps {
  settings: Settings;
  change: (patch: Partial<Settings>) => void;
  presets: Options["presets"];
}

function CostPreference({ settings, change, presets }: CostProps) {
  return (
    <fieldset className="cost">
      <legend>Cost preference</legend>
      <div className="row" role="radiogroup" aria-label="Cost preference">
        {PRESETS.map((name) => (
          <button
            key={name}
            type="button"
            role="radio"
            aria-checked={settings.preset === name}
            className={settings.preset === name ? "chip on" : "chip"}
            onClick={() => change({ preset: name })}
          >
            {name}
            {name !== "custom" && <span className="muted small"> λ={presets[name]}</span>}
          </button>
        ))}
      </div>
      {settings.preset === "custom" && (
        <label>
          λ = {lambdaAt(settings.slider)} <span className="muted small">(0: accuracy only; higher: cheaper)</span>
          <input
            type="range"
            min={0}
            max={100}
            value={settings.slider}
            onChange={(e) => change({ slider: Number(e.target.value) })}
          />
        </label>
      )}
    </fieldset>
  );
}
