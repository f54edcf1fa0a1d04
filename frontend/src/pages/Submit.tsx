export default function SubmitPage() {
  return <h1>Submit</h1>;
}
