import { SOURCES } from "./verdicts";

export function SourceSelect({
  value,
  onChange,
  label = "Source",
}: {
  value: string;
  onChange: (v: string) => void;
  label?: string;
}) {
  return (
    <label>
      {label}
      <select value={value} onChange={(event) => onChange(event.target.value)}>
        <option value="">All sources</option>
        {SOURCES.map((source) => (
          <option key={source} value={source}>
            {source.replaceAll("_", " ")}
          </option>
        ))}
      </select>
    </label>
  );
}
