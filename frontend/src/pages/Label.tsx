export default function LabelPage() {
  return <h1>Label</h1>;
}
