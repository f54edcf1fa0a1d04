export default function PoolsPage() {
  return <h1>Pools</h1>;
}
