// An export's figures in words (POST /api/models/{id}/export's answer, the archive's manifest),
// for the model page's Export panel; apart from the page's script so node can run it in tests.

const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(2)} MiB`;
const percent = (value) => `${value.toFixed(2)}%`;

// [label, text] rows of an export's answer, each one the answer holds (a detector's or a
// sandboxed export's answer has fewer).
export function exportFigures(doc) {
  const rows = [["Format", doc.precision ? `${doc.export_format} (${doc.precision})` : doc.export_format],
                ["Snapshot", `epoch ${doc.epoch}${doc.snapshot ? `, ${doc.snapshot}` : ""}`]];
  const m = doc.manifest || {};
  if (doc.checked === false) rows.push(["Checked against PyTorch", `no: ${doc.not_checked_because}`]);
  if (doc.top1_agreement != null) {
    rows.push(["Top-1 agreement with PyTorch",
               `${(doc.top1_agreement * 100).toFixed(1)}%${m.images ? ` of ${m.images} ${m.check_data || ""} images` : ""}`]);
  }
  if (doc.max_logit_diff != null) rows.push(["Largest logit difference", doc.max_logit_diff.toPrecision(2)]);
  if (doc.accuracy != null) rows.push(["Accuracy", `${percent(doc.accuracy)} (PyTorch ${percent(doc.accuracy_reference)})`]);
  if (doc.size_bytes != null) rows.push(["Size", `${mib(doc.size_bytes)} (fp32 ${mib(doc.reference_size_bytes)})`]);
  if (doc.latency_ms != null) {
    rows.push(["Latency, 1 thread", `${doc.latency_ms.toFixed(2)} ms/image (fp32 ${doc.reference_latency_ms.toFixed(2)})`]);
  }
  if (doc.forced) rows.push(["Forced", "written beyond the tolerance"]);
  rows.push(["Archive", mib(doc.archive_bytes)]);
  return rows;
}
