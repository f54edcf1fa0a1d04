// Pieces shared by the forms that start background jobs (training, evaluation).

/** A job still queued or running; anything else has ended. */
export const ACTIVE = new Set(["queued", "running"]);

export function SeedField({ seed, setSeed }: { seed: number; setSeed: (seed: number) => void }) {
  return (
    <label>
      Seed
      <input
        type="number"
        min={0}
        step={1}
        value={seed}
        onChange={(e) => setSeed(Math.max(0, Number(e.target.value) || 0))}
      />
    </label>
  );
}
