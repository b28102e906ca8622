"""The corpus's fixed validation split.

A case's group (operator and dtype, e.g. "softmax/fp32") decides its side: the first eight
hex digits of the SHA-256 of the group's name, as an integer, modulo 10, below 3 means
validation (about 30%). Every size of one operator and dtype lands on the same side, so
tuning on one size cannot leak into the validation figures. The rule was fixed, and split.json
written from it, before any model or rule work read the corpus; neither changes afterwards
(tests/test_corpus.py recomputes every entry). Tuning (thresholds, equations, parameters)
uses the zoo and the dev split only.
"""

from __future__ import annotations

import hashlib

VALIDATION_SHARE_TENTHS = 3


def split_of(group: str) -> str:
    """'validation' or 'dev' for a case group."""
    digest = int(hashlib.sha256(group.encode()).hexdigest()[:8], 16)
    return "validation" if digest % 10 < VALIDATION_SHARE_TENTHS else "dev"
