"""Task definitions: one module per task family, each exposing `*_cfg()` functions."""
