"""From recorded calls to verdicts and the report: signals, verdicts, summary, matrix, heatmap, overlay."""
