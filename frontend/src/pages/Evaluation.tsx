export default function EvaluationPage() {
  return <h1>Evaluation</h1>;
}
