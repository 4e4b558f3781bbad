"""Calibration: compare judge scores with ground truth (execution outcomes, label files,
Langfuse annotations) and report agreement."""

from scorer.calibrate.ground_truth import (
    Label,
    load_file,
    load_langfuse_annotations,
    load_terminal_bench,
)
from scorer.calibrate.report import render_table, write_report
from scorer.calibrate.stats import (
    CalibrationResult,
    DimensionAgreement,
    InterAnnotator,
    Pair,
    agreement,
    calibrate,
    inter_annotator_agreement,
    pair,
)

__all__ = [
    "CalibrationResult",
    "DimensionAgreement",
    "InterAnnotator",
    "Label",
    "Pair",
    "agreement",
    "calibrate",
    "inter_annotator_agreement",
    "load_file",
    "load_langfuse_annotations",
    "load_terminal_bench",
    "pair",
    "render_table",
    "write_report",
]
