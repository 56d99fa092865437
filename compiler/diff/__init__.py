"""Semantic diff of capability plans: named checkers, plan-set matching, renderers, blast radius.

``capplan diff`` compares two plans, two folders of plans (matched by model key, the file
stem), or the plans of a git revision against the working tree. Each difference is reported
by the checker that owns the field (``policies``, ``params``, ``loop`` …), old → new, with the
layer that set the value.
"""

from capplan.compiler.diff.checkers import CHECKERS, select_checkers
from capplan.compiler.diff.engine import diff_plan_sets
from capplan.compiler.diff.errors import DiffInputError
from capplan.compiler.diff.model import Change, DiffReport, ModelDiff

__all__ = ["CHECKERS", "Change", "DiffInputError", "DiffReport", "ModelDiff", "diff_plan_sets", "select_checkers"]
