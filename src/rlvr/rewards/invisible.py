"""What counts as an invisible character: the definition lives in ``rlvr.rewards.untrusted`` (the
one module for untrusted text); these names are re-exported for the callers that import them from
here (the audit, older tests)."""

from __future__ import annotations

from .untrusted import DEFAULT_IGNORABLE, is_blank, is_default_ignorable, is_invisible, strip_invisible

__all__ = ["DEFAULT_IGNORABLE", "is_blank", "is_default_ignorable", "is_invisible", "strip_invisible"]
