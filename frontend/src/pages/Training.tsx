export default function TrainingPage() {
  return <h1>Training</h1>;
}
