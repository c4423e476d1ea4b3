"""Former home of the EHRAgent reader; it lives in :mod:`guardagent.readers.ehragent` now."""

from guardagent.readers.ehragent import (
    EICU_PRIMARY_KEYS,
    EICU_SCHEMA,
    ehr_accessed_columns,
    ehr_code,
    parse_identity,
    parse_question,
)
from guardagent.tools.rules import check_access

__all__ = [
    "EICU_PRIMARY_KEYS", "EICU_SCHEMA", "check_access", "ehr_accessed_columns", "ehr_code",
    "parse_identity", "parse_question",
]  # fmt: skip
