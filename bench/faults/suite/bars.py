"""The bars each part's figures must clear (issue 18's "done when")."""

from __future__ import annotations

from typing import Any

ZERO: dict[str, tuple[str, ...]] = {
    "crash": (
        "lost",
        "stuck",
        "duplicated_projections",
        "duplicated_child_jobs",
        "orphan_workers",
        "orphans_after_stop",
        "keyed_duplicate_jobs",
    ),
    "storm": ("unfinished",),
    "wire": (
        "panics",
        "accepted_but_changed",
        "accepted_malformed",
        "refusal_not_protocol",
        "core_died",
        "unanswered",
    ),
    "hostile": ("untyped", "hangs", "next_job_failed"),
    "load": ("lost", "stuck", "load_jobs_not_succeeded"),
}


def check(part: str, figures: dict[str, Any]) -> list[str]:
    missed = [
        f"{key} = {figures.get(key)}, want 0"
        for key in ZERO.get(part, ())
        if figures.get(key, 0) != 0
    ]
    if part == "crash":
        equal, compared = str(figures.get("hashes_equal_clean", "0/0")).split("/")
        if equal != compared or compared == "0":
            missed.append(f"hashes_equal_clean = {equal}/{compared}, want all")
    if part in ("storm", "load"):
        storm = figures if part == "storm" else figures.get("storm", {})
        if storm.get("classified_right_pct", 0) < 99:
            missed.append(f"classified_right_pct = {storm.get('classified_right_pct')}, want >= 99")
        if storm.get("policy_followed_pct", 0) < 99:
            missed.append(f"policy_followed_pct = {storm.get('policy_followed_pct')}, want >= 99")
        if storm.get("pool_back_at_desired_secs", float("inf")) == float("inf"):
            missed.append("the pool did not come back to its desired size")
    if part == "hostile" and figures.get("typed_or_ok_pct", 0) != 100:
        missed.append(f"typed_or_ok_pct = {figures.get('typed_or_ok_pct')}, want 100")
    return missed
