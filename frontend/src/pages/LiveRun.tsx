export default function LiveRunPage() {
  return <h1>LiveRun</h1>;
}
