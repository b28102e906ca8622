"""keet optimize: profile, explain, rewrite, verify, measure, keep the best (docs/optimize.md)."""
