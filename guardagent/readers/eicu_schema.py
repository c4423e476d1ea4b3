"""The eICU schema EHRAgent queries: tables, their readable columns and primary keys.

Both EHRAgent readers (Python in :mod:`.ehragent`, SQL in :mod:`.ehr_sql`) check every name
they report against this schema, so an alias or a misspelling never reaches a verdict as a
column: a name that is not here is unreadable evidence.
"""

from __future__ import annotations

EICU_SCHEMA: dict[str, list[str]] = {
    "allergy": ["patientunitstayid", "drugname", "allergyname", "allergytime"],
    "cost": [
        "uniquepid",
        "patienthealthsystemstayid",
        "eventtype",
        "eventid",
        "chargetime",
        "cost",
    ],
    "diagnosis": ["patientunitstayid", "icd9code", "diagnosisname", "diagnosistime"],
    "intakeoutput": [
        "patientunitstayid",
        "cellpath",
        "celllabel",
        "cellvaluenumeric",
        "intakeoutputtime",
    ],
    "lab": ["patientunitstayid", "labname", "labresult", "labresulttime"],
    "medication": [
        "patientunitstayid",
        "drugname",
        "dosage",
        "routeadmin",
        "drugstarttime",
        "drugstoptime",
    ],
    "microlab": ["patientunitstayid", "culturesite", "organism", "culturetakentime"],
    "patient": [
        "patientunitstayid",
        "patienthealthsystemstayid",
        "gender",
        "age",
        "ethnicity",
        "hospitalid",
        "wardid",
        "admissionheight",
        "hospitaladmitsource",
        "hospitaldischargestatus",
        "admissionweight",
        "dischargeweight",
        "uniquepid",
        "hospitaladmittime",
        "unitadmittime",
        "unitdischargetime",
        "hospitaldischargetime",
    ],
    "treatment": ["patientunitstayid", "treatmentname", "treatmenttime"],
    "vitalperiodic": [
        "patientunitstayid",
        "temperature",
        "sao2",
        "heartrate",
        "respiration",
        "systemicsystolic",
        "systemicdiastolic",
        "systemicmean",
        "observationtime",
    ],
}
"""The 10 eICU tables EHRAgent queries and their readable columns."""

EICU_PRIMARY_KEYS: dict[str, str] = {
    "allergy": "allergyid",
    "cost": "costid",
    "diagnosis": "diagnosisid",
    "intakeoutput": "intakeoutputid",
    "lab": "labid",
    "medication": "medicationid",
    "microlab": "microlabid",
    "patient": "patientunitstayid",
    "treatment": "treatmentid",
    "vitalperiodic": "vitalperiodicid",
}
"""Each table's primary key. It exists in the database, so code can name it; no role may read
it (except patient's, which is also an ordinary column)."""

EICU_COLUMNS: dict[str, frozenset[str]] = {
    table: frozenset({*cols, EICU_PRIMARY_KEYS[table]}) for table, cols in EICU_SCHEMA.items()
}
"""Every column code can name in each table: the readable ones plus the primary key."""
