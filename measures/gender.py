"""The subject-gender resolver lives in generation.subject_gender (agreement's label contrasts use it too)."""

from generation.subject_gender import (  # noqa: F401
    FEMALE,
    MALE,
    SOURCES,
    from_attributions,
    from_pronouns,
    from_slots,
    resolve,
)
