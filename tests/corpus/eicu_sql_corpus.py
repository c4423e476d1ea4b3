"""A hand-written corpus of eICU SQL queries with the base columns each one reads.

Written for the SQL reader's tests (`tests/test_ehr_sql.py`) in the style of EHRSQL
questions over the eICU schema; none is taken from the shared benchmark data. Every expected
value was written by reading the SQL, not by running the reader:

- every column reference counts, wherever it stands (select list, WHERE, JOIN ON/USING,
  NATURAL JOIN's shared columns, GROUP BY, HAVING, ORDER BY, windows, CASE, function
  arguments, subqueries of every kind, every branch of a compound, unused CTEs);
- a derived column (`t1.c1`, a CTE's column, a result alias) adds nothing by itself: its
  defining expression's columns are listed where it is defined;
- `*` / `t.*` over a base table reads all its columns, primary key included; over a derived
  table or CTE it reads that query's result columns (already listed);
- a table in FROM/JOIN is listed even when none of its columns is read (`count(*)`);
- a bare column several tables in scope have is listed for each of them.
"""

from __future__ import annotations

from typing import NamedTuple


class SqlCase(NamedTuple):
    """One query and the (table -> columns) it reads."""

    id: str
    sql: str
    reads: dict[str, set[str]]


class BadSql(NamedTuple):
    """A query the reader must refuse, with the reason code it must give."""

    id: str
    sql: str
    reason: str


# Every column of each table (readable ones and the primary key), written out for `*` cases.
ALL_LAB = {"patientunitstayid", "labname", "labresult", "labresulttime", "labid"}
ALL_TREATMENT = {"patientunitstayid", "treatmentname", "treatmenttime", "treatmentid"}
ALL_ALLERGY = {"patientunitstayid", "drugname", "allergyname", "allergytime", "allergyid"}
ALL_DIAGNOSIS = {"patientunitstayid", "icd9code", "diagnosisname", "diagnosistime", "diagnosisid"}
ALL_MICROLAB = {"patientunitstayid", "culturesite", "organism", "culturetakentime", "microlabid"}
ALL_MEDICATION = {
    "patientunitstayid",
    "drugname",
    "dosage",
    "routeadmin",
    "drugstarttime",
    "drugstoptime",
    "medicationid",
}
ALL_COST = {
    "uniquepid",
    "patienthealthsystemstayid",
    "eventtype",
    "eventid",
    "chargetime",
    "cost",
    "costid",
}
ALL_INTAKEOUTPUT = {
    "patientunitstayid",
    "cellpath",
    "celllabel",
    "cellvaluenumeric",
    "intakeoutputtime",
    "intakeoutputid",
}
ALL_VITALPERIODIC = {
    "patientunitstayid",
    "temperature",
    "sao2",
    "heartrate",
    "respiration",
    "systemicsystolic",
    "systemicdiastolic",
    "systemicmean",
    "observationtime",
    "vitalperiodicid",
}
ALL_PATIENT = {
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
}

C = SqlCase

CORPUS: list[SqlCase] = [
    # -- single table ----------------------------------------------------------------------
    C(
        "a01-gender",
        "select distinct patient.gender from patient where patient.uniquepid = '031-22988'",
        {"patient": {"gender", "uniquepid"}},
    ),
    C(
        "a02-age-current-stay",
        "select patient.age from patient where patient.uniquepid = '006-80884' and patient.hospitaldischargetime is null",
        {"patient": {"age", "uniquepid", "hospitaldischargetime"}},
    ),
    C("a03-count-star", "select count(*) from lab", {"lab": set()}),
    C("a04-distinct", "select distinct lab.labname from lab", {"lab": {"labname"}}),
    C(
        "a05-max",
        "select max(vitalperiodic.heartrate) from vitalperiodic where vitalperiodic.patientunitstayid = 242040",
        {"vitalperiodic": {"heartrate", "patientunitstayid"}},
    ),
    C(
        "a06-avg-cost",
        "select avg(cost.cost) from cost where cost.eventtype = 'treatment'",
        {"cost": {"cost", "eventtype"}},
    ),
    C(
        "a07-like",
        "select min(intakeoutput.cellvaluenumeric) from intakeoutput where intakeoutput.celllabel = 'urine' and intakeoutput.cellpath like '%output%'",
        {"intakeoutput": {"cellvaluenumeric", "celllabel", "cellpath"}},
    ),
    C(
        "a08-order-limit",
        "select medication.dosage, medication.routeadmin from medication where medication.drugname = 'heparin 5000 unit/ml' order by medication.drugstarttime desc limit 1",
        {"medication": {"dosage", "routeadmin", "drugname", "drugstarttime"}},
    ),
    C(
        "a09-first-culture",
        "select microlab.organism from microlab where microlab.culturesite = 'sputum, tracheal specimen' order by microlab.culturetakentime limit 1",
        {"microlab": {"organism", "culturesite", "culturetakentime"}},
    ),
    C(
        "a10-allergy",
        "select allergy.allergyname from allergy where allergy.drugname = 'amoxicillin' and allergy.allergytime > '2104-01-01'",
        {"allergy": {"allergyname", "drugname", "allergytime"}},
    ),
    C(
        "a11-treatment-time",
        "select treatment.treatmenttime from treatment where treatment.treatmentname = 'mechanical ventilation'",
        {"treatment": {"treatmenttime", "treatmentname"}},
    ),
    C(
        "a12-icd9",
        "select diagnosis.icd9code from diagnosis where diagnosis.diagnosisname = 'acute respiratory failure'",
        {"diagnosis": {"icd9code", "diagnosisname"}},
    ),
    C(
        "a13-count-distinct",
        "select count(distinct patient.uniquepid) from patient where patient.hospitalid = 420",
        {"patient": {"uniquepid", "hospitalid"}},
    ),
    C(
        "a14-weight-change",
        "select patient.admissionweight - patient.dischargeweight from patient where patient.patientunitstayid = 1012",
        {"patient": {"admissionweight", "dischargeweight", "patientunitstayid"}},
    ),
    C(
        "a15-count-gt-zero",
        "select count(*) > 0 from allergy where allergy.allergyname = 'sulfa (sulfonamide antibiotics)'",
        {"allergy": {"allergyname"}},
    ),
    C("a16-limit-offset", "select labresult from lab limit 5 offset 10", {"lab": {"labresult"}}),
    C("a17-constant-from-table", "select 1 from treatment", {"treatment": set()}),
    C("a18-no-table", "select 'no table at all', 2 + 3", {}),
    C(
        "a19-two-filters",
        "select patient.ethnicity, patient.gender from patient where patient.wardid = 331 and patient.age = '67'",
        {"patient": {"ethnicity", "gender", "wardid", "age"}},
    ),
    C(
        "a20-not-null",
        "select distinct diagnosis.diagnosisname from diagnosis where diagnosis.diagnosistime is not null",
        {"diagnosis": {"diagnosisname", "diagnosistime"}},
    ),
    C(
        "a21-sao2",
        "select vitalperiodic.sao2 from vitalperiodic where vitalperiodic.sao2 < 90 and vitalperiodic.observationtime >= '2105-03-01'",
        {"vitalperiodic": {"sao2", "observationtime"}},
    ),
    C(
        "a22-discharge-status",
        "select patient.hospitaladmitsource from patient where patient.hospitaldischargestatus = 'expired'",
        {"patient": {"hospitaladmitsource", "hospitaldischargestatus"}},
    ),
    C(
        "a23-cost-event",
        "select cost.chargetime from cost where cost.eventid = 5521 and cost.patienthealthsystemstayid = 129",
        {"cost": {"chargetime", "eventid", "patienthealthsystemstayid"}},
    ),
    C(
        "a24-in-list",
        "select medication.drugstoptime from medication where medication.drugname in ('aspirin', 'clopidogrel')",
        {"medication": {"drugstoptime", "drugname"}},
    ),
    C(
        "a25-between",
        "select vitalperiodic.systemicsystolic, vitalperiodic.systemicdiastolic, vitalperiodic.systemicmean from vitalperiodic where vitalperiodic.respiration between 12 and 20",
        {"vitalperiodic": {"systemicsystolic", "systemicdiastolic", "systemicmean", "respiration"}},
    ),
    C(
        "a26-last-temperature",
        "select vitalperiodic.temperature from vitalperiodic where vitalperiodic.temperature is not null order by vitalperiodic.observationtime desc limit 1",
        {"vitalperiodic": {"temperature", "observationtime"}},
    ),
    C(
        "a27-column-vs-column",
        "select patient.admissionheight from patient where patient.unitadmittime < patient.hospitaladmittime",
        {"patient": {"admissionheight", "unitadmittime", "hospitaladmittime"}},
    ),
    C(
        "a28-unit-discharge",
        "select patient.unitdischargetime from patient where patient.patienthealthsystemstayid = 881",
        {"patient": {"unitdischargetime", "patienthealthsystemstayid"}},
    ),
    # -- date functions --------------------------------------------------------------------
    C(
        "b01-strftime-year",
        "select count(*) from lab where lab.labname = 'glucose' and strftime('%Y', lab.labresulttime) = '2104'",
        {"lab": {"labname", "labresulttime"}},
    ),
    C(
        "b02-datetime-last-year",
        "select treatment.treatmentname from treatment where datetime(treatment.treatmenttime, 'start of year') = datetime(current_time, 'start of year', '-1 year')",
        {"treatment": {"treatmentname", "treatmenttime"}},
    ),
    C(
        "b03-julianday-hours",
        "select 24 * (julianday(current_time) - julianday(patient.unitadmittime)) from patient where patient.uniquepid = '030-10407' and patient.unitdischargetime is null",
        {"patient": {"unitadmittime", "uniquepid", "unitdischargetime"}},
    ),
    C(
        "b04-year-month",
        "select medication.drugname from medication where strftime('%y-%m', medication.drugstarttime) >= '2103-05'",
        {"medication": {"drugname", "drugstarttime"}},
    ),
    C(
        "b05-last-two-years",
        "select count(*) from diagnosis where datetime(diagnosis.diagnosistime) >= datetime(current_time, '-2 year')",
        {"diagnosis": {"diagnosistime"}},
    ),
    C(
        "b06-date-between",
        "select date(microlab.culturetakentime) from microlab where date(microlab.culturetakentime) between '2104-01-01' and '2104-12-31'",
        {"microlab": {"culturetakentime"}},
    ),
    C(
        "b07-group-by-month",
        "select strftime('%m', cost.chargetime) as month, sum(cost.cost) from cost group by strftime('%m', cost.chargetime)",
        {"cost": {"chargetime", "cost"}},
    ),
    C(
        "b08-julianday-span",
        "select julianday(max(lab.labresulttime)) - julianday(min(lab.labresulttime)) from lab where lab.patientunitstayid = 3021",
        {"lab": {"labresulttime", "patientunitstayid"}},
    ),
    C(
        "b09-cast-year",
        "select cast(strftime('%Y', allergy.allergytime) as integer) from allergy",
        {"allergy": {"allergytime"}},
    ),
    C(
        "b10-time",
        "select time(intakeoutput.intakeoutputtime) from intakeoutput where intakeoutput.cellpath like '%intake%'",
        {"intakeoutput": {"intakeoutputtime", "cellpath"}},
    ),
    C(
        "b11-day-of-year",
        "select strftime('%j', current_time) - strftime('%j', medication.drugstarttime) from medication where medication.drugstoptime is null",
        {"medication": {"drugstarttime", "drugstoptime"}},
    ),
    C(
        "b12-start-of-month",
        "select count(*) from patient where datetime(patient.hospitaldischargetime, 'start of month') = datetime(current_time, 'start of month', '-0 month')",
        {"patient": {"hospitaldischargetime"}},
    ),
    C(
        "b13-one-day",
        "select vitalperiodic.heartrate from vitalperiodic where strftime('%Y-%m-%d', vitalperiodic.observationtime) = '2105-12-30' and vitalperiodic.heartrate > 100",
        {"vitalperiodic": {"heartrate", "observationtime"}},
    ),
    C(
        "b14-unixepoch",
        "select unixepoch(treatment.treatmenttime) from treatment",
        {"treatment": {"treatmenttime"}},
    ),
    C("b15-clock-only", "select datetime(current_time), date('now', 'localtime')", {}),
    # -- joins and table aliases -----------------------------------------------------------
    C(
        "c01-join-aliases",
        "select l.labresult from lab l join patient p on l.patientunitstayid = p.patientunitstayid where p.uniquepid = '027-85328'",
        {"lab": {"labresult", "patientunitstayid"}, "patient": {"patientunitstayid", "uniquepid"}},
    ),
    C(
        "c02-comma-join",
        "select lab.labname, patient.gender from lab, patient where lab.patientunitstayid = patient.patientunitstayid and patient.age > '60'",
        {
            "lab": {"labname", "patientunitstayid"},
            "patient": {"gender", "patientunitstayid", "age"},
        },
    ),
    C(
        "c03-inner-join-as",
        "select d.diagnosisname, t.treatmentname from diagnosis as d inner join treatment as t on d.patientunitstayid = t.patientunitstayid and t.treatmenttime > d.diagnosistime",
        {
            "diagnosis": {"diagnosisname", "patientunitstayid", "diagnosistime"},
            "treatment": {"treatmentname", "patientunitstayid", "treatmenttime"},
        },
    ),
    C(
        "c04-three-tables",
        "select p.uniquepid, m.drugname, a.allergyname from patient p join medication m on m.patientunitstayid = p.patientunitstayid join allergy a on a.patientunitstayid = p.patientunitstayid and a.drugname = m.drugname",
        {
            "patient": {"uniquepid", "patientunitstayid"},
            "medication": {"drugname", "patientunitstayid"},
            "allergy": {"allergyname", "patientunitstayid", "drugname"},
        },
    ),
    C(
        "c05-bare-unique-columns",
        "select labname, gender from lab join patient on lab.patientunitstayid = patient.patientunitstayid",
        {"lab": {"labname", "patientunitstayid"}, "patient": {"gender", "patientunitstayid"}},
    ),
    C(
        "c06-ambiguous-bare",
        "select patientunitstayid from lab, treatment",
        {"lab": {"patientunitstayid"}, "treatment": {"patientunitstayid"}},
    ),
    C(
        "c07-using-count",
        "select count(*) from lab join vitalperiodic using (patientunitstayid)",
        {"lab": {"patientunitstayid"}, "vitalperiodic": {"patientunitstayid"}},
    ),
    C(
        "c08-using-bare",
        "select heartrate, labresult from lab join vitalperiodic using (patientunitstayid) where labname = 'lactate'",
        {
            "lab": {"patientunitstayid", "labresult", "labname"},
            "vitalperiodic": {"patientunitstayid", "heartrate"},
        },
    ),
    C(
        "c09-natural-join",
        "select treatmentname from treatment natural join diagnosis",
        {"treatment": {"treatmentname", "patientunitstayid"}, "diagnosis": {"patientunitstayid"}},
    ),
    C(
        "c10-natural-two-shared",
        "select allergy.drugname from allergy natural join medication",
        {
            "allergy": {"drugname", "patientunitstayid"},
            "medication": {"drugname", "patientunitstayid"},
        },
    ),
    C(
        "c11-self-join",
        "select a.labresult, b.labresult from lab a join lab b on a.patientunitstayid = b.patientunitstayid and a.labresulttime < b.labresulttime where a.labname = 'potassium' and b.labname = 'potassium'",
        {"lab": {"labresult", "patientunitstayid", "labresulttime", "labname"}},
    ),
    C(
        "c12-left-join-anti",
        "select p.gender from patient p left outer join allergy al on al.patientunitstayid = p.patientunitstayid where al.allergyid is null",
        {"patient": {"gender", "patientunitstayid"}, "allergy": {"patientunitstayid", "allergyid"}},
    ),
    C(
        "c13-cross-join-count",
        "select count(*) from patient cross join cost",
        {"patient": set(), "cost": set()},
    ),
    C(
        "c14-two-key-join",
        "select cost.cost from cost join patient on cost.uniquepid = patient.uniquepid and cost.patienthealthsystemstayid = patient.patienthealthsystemstayid where patient.gender = 'female'",
        {
            "cost": {"cost", "uniquepid", "patienthealthsystemstayid"},
            "patient": {"uniquepid", "patienthealthsystemstayid", "gender"},
        },
    ),
    C(
        "c15-using-two-columns",
        "select uniquepid from cost join patient using (uniquepid, patienthealthsystemstayid)",
        {
            "cost": {"uniquepid", "patienthealthsystemstayid"},
            "patient": {"uniquepid", "patienthealthsystemstayid"},
        },
    ),
    C(
        "c16-comma-join-aliases",
        "select i.celllabel, v.heartrate from intakeoutput i, vitalperiodic v where i.patientunitstayid = v.patientunitstayid and i.intakeoutputtime = v.observationtime",
        {
            "intakeoutput": {"celllabel", "patientunitstayid", "intakeoutputtime"},
            "vitalperiodic": {"heartrate", "patientunitstayid", "observationtime"},
        },
    ),
    C(
        "c17-join-filters",
        "select microlab.organism, patient.age from microlab join patient on microlab.patientunitstayid = patient.patientunitstayid where patient.age >= 80 and microlab.culturesite = 'blood, venipuncture'",
        {
            "microlab": {"organism", "patientunitstayid", "culturesite"},
            "patient": {"age", "patientunitstayid"},
        },
    ),
    C(
        "c18-bare-after-alias",
        "select dosage from medication m join patient p on m.patientunitstayid = p.patientunitstayid where ethnicity = 'hispanic'",
        {
            "medication": {"dosage", "patientunitstayid"},
            "patient": {"patientunitstayid", "ethnicity"},
        },
    ),
    C(
        "c19-parenthesized-join",
        "select * from ( lab join treatment on lab.patientunitstayid = treatment.patientunitstayid )",
        {"lab": ALL_LAB, "treatment": ALL_TREATMENT},
    ),
    C(
        "c20-join-derived",
        "select d.diagnosisname from diagnosis d join (select patientunitstayid from patient where age > '70') old on d.patientunitstayid = old.patientunitstayid",
        {
            "diagnosis": {"diagnosisname", "patientunitstayid"},
            "patient": {"patientunitstayid", "age"},
        },
    ),
    C(
        "c21-main-schema",
        "select lab.labname from main.lab where main.lab.labresult > 5",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "c22-join-group",
        "select t.treatmentname, count(*) from treatment t join patient p on t.patientunitstayid = p.patientunitstayid group by t.treatmentname",
        {"treatment": {"treatmentname", "patientunitstayid"}, "patient": {"patientunitstayid"}},
    ),
    # -- subqueries ------------------------------------------------------------------------
    C(
        "d01-in-select",
        "select count(distinct patient.uniquepid) from patient where patient.patientunitstayid in (select diagnosis.patientunitstayid from diagnosis where diagnosis.diagnosisname = 'pneumonia')",
        {
            "patient": {"uniquepid", "patientunitstayid"},
            "diagnosis": {"patientunitstayid", "diagnosisname"},
        },
    ),
    C(
        "d02-two-levels",
        "select lab.labresult from lab where lab.patientunitstayid in (select patient.patientunitstayid from patient where patient.patienthealthsystemstayid in (select patient.patienthealthsystemstayid from patient where patient.uniquepid = '012-4131')) and lab.labname = 'bicarbonate'",
        {
            "lab": {"labresult", "patientunitstayid", "labname"},
            "patient": {"patientunitstayid", "patienthealthsystemstayid", "uniquepid"},
        },
    ),
    C(
        "d03-three-levels",
        "select medication.drugname from medication where medication.patientunitstayid in (select patient.patientunitstayid from patient where patient.patienthealthsystemstayid in (select patient.patienthealthsystemstayid from patient where patient.uniquepid in (select cost.uniquepid from cost where cost.cost > 5000)))",
        {
            "medication": {"drugname", "patientunitstayid"},
            "patient": {"patientunitstayid", "patienthealthsystemstayid", "uniquepid"},
            "cost": {"uniquepid", "cost"},
        },
    ),
    C(
        "d04-not-in",
        "select patient.uniquepid from patient where patient.patientunitstayid not in (select allergy.patientunitstayid from allergy)",
        {"patient": {"uniquepid", "patientunitstayid"}, "allergy": {"patientunitstayid"}},
    ),
    C(
        "d05-exists-correlated",
        "select patient.gender from patient where exists (select 1 from treatment where treatment.patientunitstayid = patient.patientunitstayid and treatment.treatmentname = 'dialysis')",
        {
            "patient": {"gender", "patientunitstayid"},
            "treatment": {"patientunitstayid", "treatmentname"},
        },
    ),
    C(
        "d06-not-exists-aliases",
        "select p.uniquepid from patient p where not exists (select 1 from lab l where l.patientunitstayid = p.patientunitstayid)",
        {"patient": {"uniquepid", "patientunitstayid"}, "lab": {"patientunitstayid"}},
    ),
    C(
        "d07-scalar-in-select",
        "select lab.labname, (select max(l2.labresult) from lab l2 where l2.labname = lab.labname) from lab",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "d08-scalar-in-where",
        "select vitalperiodic.heartrate from vitalperiodic where vitalperiodic.heartrate > (select avg(vitalperiodic.heartrate) from vitalperiodic)",
        {"vitalperiodic": {"heartrate"}},
    ),
    C(
        "d09-bare-resolves-inner-first",
        "select labname from lab where exists (select 1 from treatment where patientunitstayid = 5)",
        {"lab": {"labname"}, "treatment": {"patientunitstayid"}},
    ),
    C(
        "d10-bare-falls-to-outer",
        "select labname from lab where exists (select 1 from treatment where treatmentname = labname)",
        {"lab": {"labname"}, "treatment": {"treatmentname"}},
    ),
    C(
        "d11-count-over-derived",
        "select count(*) from (select distinct lab.patientunitstayid from lab where lab.labname = 'troponin - i')",
        {"lab": {"patientunitstayid", "labname"}},
    ),
    C(
        "d12-aggregate-of-derived",
        "select max(t.total) from (select sum(cost.cost) as total from cost group by cost.patienthealthsystemstayid) as t",
        {"cost": {"cost", "patienthealthsystemstayid"}},
    ),
    C(
        "d13-two-scalars",
        "select (select count(*) from diagnosis) + (select count(*) from treatment)",
        {"diagnosis": set(), "treatment": set()},
    ),
    C(
        "d14-equals-scalar",
        "select patient.age from patient where patient.patientunitstayid = (select treatment.patientunitstayid from treatment order by treatment.treatmenttime desc limit 1)",
        {
            "patient": {"age", "patientunitstayid"},
            "treatment": {"patientunitstayid", "treatmenttime"},
        },
    ),
    C(
        "d15-last-stay",
        "select intakeoutput.cellvaluenumeric from intakeoutput where intakeoutput.patientunitstayid in (select patient.patientunitstayid from patient where patient.uniquepid = '004-13127' and patient.unitdischargetime is not null order by patient.unitadmittime desc limit 1) and intakeoutput.celllabel = 'enteral formula volume/bolus amt (ml)'",
        {
            "intakeoutput": {"cellvaluenumeric", "patientunitstayid", "celllabel"},
            "patient": {"patientunitstayid", "uniquepid", "unitdischargetime", "unitadmittime"},
        },
    ),
    C(
        "d16-correlated-in",
        "select m.drugname from medication m where m.patientunitstayid in (select d.patientunitstayid from diagnosis d where d.diagnosisname = 'hypertension' and d.diagnosistime < m.drugstarttime)",
        {
            "medication": {"drugname", "patientunitstayid", "drugstarttime"},
            "diagnosis": {"patientunitstayid", "diagnosisname", "diagnosistime"},
        },
    ),
    C(
        "d17-three-level-correlated",
        "select p.uniquepid from patient p where p.patientunitstayid in (select l.patientunitstayid from lab l where l.labresult > (select avg(l3.labresult) from lab l3 where l3.labname = l.labname and l3.patientunitstayid <> p.patientunitstayid))",
        {
            "patient": {"uniquepid", "patientunitstayid"},
            "lab": {"patientunitstayid", "labresult", "labname"},
        },
    ),
    C(
        "d18-star-over-nested-derived",
        "select count(*) from (select * from (select labname, labresult from lab where labresult > 10) as high) as outerq",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "d19-same-table-in",
        "select patient.wardid from patient where patient.age in (select patient.age from patient where patient.gender = 'male')",
        {"patient": {"wardid", "age", "gender"}},
    ),
    C(
        "d20-most-frequent",
        "select labresult from lab where labname = (select labname from lab group by labname order by count(*) desc limit 1)",
        {"lab": {"labresult", "labname"}},
    ),
    C(
        "d21-inner-alias-shadows-outer",
        "select t.treatmentname from treatment t where t.patientunitstayid in (select t.patientunitstayid from diagnosis t where t.icd9code = '518.81')",
        {
            "treatment": {"treatmentname", "patientunitstayid"},
            "diagnosis": {"patientunitstayid", "icd9code"},
        },
    ),
    C(
        "d22-bare-in-subquery",
        "select count(*) from patient where patientunitstayid in (select patientunitstayid from microlab where organism = 'escherichia coli')",
        {"patient": {"patientunitstayid"}, "microlab": {"patientunitstayid", "organism"}},
    ),
    C(
        "d23-scalar-in-function",
        "select lab.labname from lab where lab.labresult >= coalesce((select max(vitalperiodic.temperature) from vitalperiodic), 0)",
        {"lab": {"labname", "labresult"}, "vitalperiodic": {"temperature"}},
    ),
    C(
        "d24-chain-three-tables",
        "select cost.eventtype from cost where cost.patienthealthsystemstayid in (select patient.patienthealthsystemstayid from patient where patient.patientunitstayid in (select lab.patientunitstayid from lab where lab.labname = 'ptt'))",
        {
            "cost": {"eventtype", "patienthealthsystemstayid"},
            "patient": {"patienthealthsystemstayid", "patientunitstayid"},
            "lab": {"patientunitstayid", "labname"},
        },
    ),
    C(
        "d25-scalars-without-from",
        "select (select gender from patient where uniquepid = '021-100'), (select 42)",
        {"patient": {"gender", "uniquepid"}},
    ),
    # -- window functions and derived columns ----------------------------------------------
    C(
        "e01-top-drugs",
        "select t1.drugname from (select medication.drugname, dense_rank() over (order by count(*) desc) as c1 from medication group by medication.drugname) as t1 where t1.c1 <= 4",
        {"medication": {"drugname"}},
    ),
    C(
        "e02-top-labs-by-age",
        "select t1.labname from (select lab.labname, dense_rank() over (order by count(*) asc) as c1 from lab where lab.patientunitstayid in (select patient.patientunitstayid from patient where patient.age between 40 and 49) and strftime('%Y', lab.labresulttime) >= '2102' group by lab.labname) as t1 where t1.c1 <= 3",
        {
            "lab": {"labname", "patientunitstayid", "labresulttime"},
            "patient": {"patientunitstayid", "age"},
        },
    ),
    C(
        "e03-rank-partition",
        "select labname, rank() over (partition by labname order by labresult desc) from lab",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "e04-row-number",
        "select patientunitstayid, row_number() over (partition by patientunitstayid order by observationtime) as rn from vitalperiodic",
        {"vitalperiodic": {"patientunitstayid", "observationtime"}},
    ),
    C(
        "e05-renamed-column",
        "select x.pid from (select patientunitstayid as pid, row_number() over (order by heartrate desc) as r from vitalperiodic) x where x.r = 1",
        {"vitalperiodic": {"patientunitstayid", "heartrate"}},
    ),
    C(
        "e06-count-as-n",
        "select avg(t.n) from (select diagnosis.patientunitstayid, count(*) as n from diagnosis group by diagnosis.patientunitstayid) t",
        {"diagnosis": {"patientunitstayid"}},
    ),
    C(
        "e07-derived-of-derived",
        "select t2.c from (select t1.c from (select lab.labresult as c from lab where lab.labname = 'ph') as t1) as t2 where t2.c > 7.4",
        {"lab": {"labresult", "labname"}},
    ),
    C(
        "e08-lag-lead",
        "select lag(labresult) over (order by labresulttime), lead(labresult, 1) over (order by labresulttime) from lab where labname = 'hgb'",
        {"lab": {"labresult", "labresulttime", "labname"}},
    ),
    C(
        "e09-running-sum",
        "select sum(cost) over (partition by uniquepid order by chargetime rows between unbounded preceding and current row) from cost",
        {"cost": {"cost", "uniquepid", "chargetime"}},
    ),
    C(
        "e10-named-window",
        "select first_value(treatmentname) over w from treatment window w as (partition by patientunitstayid order by treatmenttime)",
        {"treatment": {"treatmentname", "patientunitstayid", "treatmenttime"}},
    ),
    C(
        "e11-derived-in-where-order",
        "select t.c1, t.labname from (select labname, labresult as c1 from lab) t where t.c1 > 1 order by t.c1",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "e12-ntile",
        "select ntile(4) over (order by patient.admissionweight) as quartile, patient.uniquepid from patient",
        {"patient": {"admissionweight", "uniquepid"}},
    ),
    C(
        "e13-top-organism",
        "select dr.organism from (select microlab.organism, dense_rank() over (order by count(*) desc) as c1 from microlab where microlab.culturesite = 'urine' group by microlab.organism) as dr where dr.c1 = 1",
        {"microlab": {"organism", "culturesite"}},
    ),
    C(
        "e14-window-over-derived",
        "select t3.treatmentname from (select t2.treatmentname, dense_rank() over (order by count(*) desc) as c1 from (select treatment.treatmentname, treatment.patientunitstayid from treatment where treatment.treatmenttime > '2104') as t2 group by t2.treatmentname) as t3 where t3.c1 <= 5",
        {"treatment": {"treatmentname", "patientunitstayid", "treatmenttime"}},
    ),
    C(
        "e15-alias-named-like-column",
        "select sub.labresult from (select max(labresult) as labresult, labname from lab group by labname) sub",
        {"lab": {"labresult", "labname"}},
    ),
    C(
        "e16-cume-dist",
        "select cume_dist() over (order by cellvaluenumeric) from intakeoutput",
        {"intakeoutput": {"cellvaluenumeric"}},
    ),
    # -- common table expressions ----------------------------------------------------------
    C(
        "f01-simple-cte",
        "with t as (select labname, labresult from lab where labresult > 100) select labname from t",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "f02-cte-used-twice",
        "with m as (select patientunitstayid, drugname from medication where routeadmin = 'iv') select a.drugname, b.drugname from m a join m b on a.patientunitstayid = b.patientunitstayid and a.drugname < b.drugname",
        {"medication": {"patientunitstayid", "drugname", "routeadmin"}},
    ),
    C(
        "f03-cte-uses-cte",
        "with p as (select patientunitstayid, age from patient where gender = 'female'), l as (select lab.labresult, lab.patientunitstayid from lab join p on lab.patientunitstayid = p.patientunitstayid) select avg(labresult) from l",
        {
            "patient": {"patientunitstayid", "age", "gender"},
            "lab": {"labresult", "patientunitstayid"},
        },
    ),
    C(
        "f04-cte-shadows-table",
        "with lab as (select labname from lab where labresult < 0) select count(*) from lab",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "f05-cte-column-list",
        "with x(name, value) as (select labname, labresult from lab) select name from x where value > 3",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "f06-recursive-calendar",
        "with recursive days(d) as (select date('2104-01-01') union all select date(d, '+1 day') from days where d < '2104-01-31') select days.d, count(treatment.treatmentid) from days left join treatment on date(treatment.treatmenttime) = days.d group by days.d",
        {"treatment": {"treatmentid", "treatmenttime"}},
    ),
    C(
        "f07-unused-cte",
        "with unused as (select allergyname from allergy) select gender from patient",
        {"allergy": {"allergyname"}, "patient": {"gender"}},
    ),
    C(
        "f08-cte-in-subquery",
        "with sick as (select patientunitstayid from diagnosis where diagnosisname like '%sepsis%') select count(*) from patient where patientunitstayid in (select patientunitstayid from sick)",
        {"diagnosis": {"patientunitstayid", "diagnosisname"}, "patient": {"patientunitstayid"}},
    ),
    C(
        "f09-with-inside-subquery",
        "select count(*) from patient where patient.patientunitstayid in (with t as (select treatment.patientunitstayid from treatment where treatment.treatmentname = 'cpap') select patientunitstayid from t)",
        {"treatment": {"patientunitstayid", "treatmentname"}, "patient": {"patientunitstayid"}},
    ),
    C(
        "f10-cte-window",
        "with ranked as (select drugname, dense_rank() over (order by count(*) desc) as rk from medication group by drugname) select drugname from ranked where rk <= 3",
        {"medication": {"drugname"}},
    ),
    C(
        "f11-star-from-cte",
        "with c as (select uniquepid, age from patient) select * from c",
        {"patient": {"uniquepid", "age"}},
    ),
    C(
        "f12-cte-star",
        "with c as (select * from allergy) select drugname from c",
        {"allergy": ALL_ALLERGY},
    ),
    C(
        "f13-cte-alias-join",
        "with v as (select patientunitstayid as pid, max(heartrate) as hr from vitalperiodic group by patientunitstayid) select p.uniquepid, v2.hr from patient p join v as v2 on v2.pid = p.patientunitstayid",
        {
            "vitalperiodic": {"patientunitstayid", "heartrate"},
            "patient": {"uniquepid", "patientunitstayid"},
        },
    ),
    C(
        "f14-cte-chain",
        "with a as (select patientunitstayid from treatment), b as (select patientunitstayid from a), c as (select patientunitstayid from b) select count(*) from c",
        {"treatment": {"patientunitstayid"}},
    ),
    C(
        "f15-cte-union",
        "with x as (select drugname from medication), y as (select drugname from allergy) select drugname from x union select drugname from y",
        {"medication": {"drugname"}, "allergy": {"drugname"}},
    ),
    C(
        "f16-cte-count-alias",
        "with t1 as (select count(*) as c1 from lab) select t1.c1 from t1",
        {"lab": set()},
    ),
    # -- group by / having / case / distinct ----------------------------------------------
    C(
        "g01-having-count",
        "select labname, count(*) from lab group by labname having count(*) > 10",
        {"lab": {"labname"}},
    ),
    C(
        "g02-having-max",
        "select diagnosisname from diagnosis group by diagnosisname having max(diagnosistime) > '2104'",
        {"diagnosis": {"diagnosisname", "diagnosistime"}},
    ),
    C(
        "g03-case-group-ordinal",
        "select case when patient.age > '65' then 'senior' else 'adult' end, count(*) from patient group by 1",
        {"patient": {"age"}},
    ),
    C(
        "g04-sum-case",
        "select sum(case when medication.routeadmin = 'po' then 1 else 0 end) from medication",
        {"medication": {"routeadmin"}},
    ),
    C(
        "g05-count-distinct",
        "select count(distinct microlab.organism) from microlab",
        {"microlab": {"organism"}},
    ),
    C(
        "g06-distinct-two",
        "select distinct patient.hospitalid, patient.wardid from patient order by patient.hospitalid",
        {"patient": {"hospitalid", "wardid"}},
    ),
    C(
        "g07-simple-case",
        "select case treatment.treatmentname when 'intubation' then treatment.treatmenttime end from treatment",
        {"treatment": {"treatmentname", "treatmenttime"}},
    ),
    C(
        "g08-having-alias",
        "select eventtype, avg(cost) as mean_cost from cost group by eventtype having mean_cost > 100 order by mean_cost desc",
        {"cost": {"eventtype", "cost"}},
    ),
    C(
        "g09-order-by-count-alias",
        "select gender, count(*) as n from patient group by gender order by n desc",
        {"patient": {"gender"}},
    ),
    C(
        "g10-iif",
        "select iif(vitalperiodic.heartrate > 100, 'tachy', 'ok') from vitalperiodic",
        {"vitalperiodic": {"heartrate"}},
    ),
    C(
        "g11-group-concat",
        "select group_concat(distinct allergy.allergyname) from allergy where allergy.patientunitstayid = 77",
        {"allergy": {"allergyname", "patientunitstayid"}},
    ),
    C(
        "g12-total-having",
        "select celllabel, total(cellvaluenumeric) from intakeoutput group by celllabel having total(cellvaluenumeric) > 1000",
        {"intakeoutput": {"celllabel", "cellvaluenumeric"}},
    ),
    C(
        "g13-filter-clause",
        "select count(*) filter (where labresult > 5) from lab",
        {"lab": {"labresult"}},
    ),
    C(
        "g14-round-avg",
        "select round(avg(patient.admissionweight), 2) from patient where patient.admissionweight is not null group by patient.gender",
        {"patient": {"admissionweight", "gender"}},
    ),
    C(
        "g15-nullif-ifnull",
        "select nullif(lab.labresult, 0), ifnull(lab.labname, 'unknown') from lab",
        {"lab": {"labresult", "labname"}},
    ),
    C(
        "g16-string-functions",
        "select upper(substr(drugname, 1, 3)), length(dosage) from medication",
        {"medication": {"drugname", "dosage"}},
    ),
    C(
        "g17-pivot-with-case",
        "select max(case when labname = 'sodium' then labresult end) as na, max(case when labname = 'potassium' then labresult end) as k from lab group by patientunitstayid",
        {"lab": {"labname", "labresult", "patientunitstayid"}},
    ),
    # -- select * / t.* --------------------------------------------------------------------
    C("h01-star", "select * from lab", {"lab": ALL_LAB}),
    C(
        "h02-star-where",
        "select * from treatment where treatmentname = 'chest x-ray'",
        {"treatment": ALL_TREATMENT},
    ),
    C("h03-alias-star", "select p.* from patient p where p.age > '90'", {"patient": ALL_PATIENT}),
    C(
        "h04-one-table-star",
        "select l.*, p.gender from lab l join patient p on l.patientunitstayid = p.patientunitstayid",
        {"lab": ALL_LAB, "patient": {"gender", "patientunitstayid"}},
    ),
    C("h05-star-over-derived", "select * from (select labname from lab)", {"lab": {"labname"}}),
    C(
        "h06-star-two-tables",
        "select * from allergy, microlab",
        {"allergy": ALL_ALLERGY, "microlab": ALL_MICROLAB},
    ),
    C(
        "h07-star-in-exists",
        "select count(*) from medication where exists (select * from allergy where allergy.drugname = medication.drugname)",
        {"medication": {"drugname"}, "allergy": ALL_ALLERGY},
    ),
    C(
        "h08-alias-star-over-derived",
        "select t.* from (select distinct culturesite from microlab) as t",
        {"microlab": {"culturesite"}},
    ),
    C("h09-star-limit", "select * from cost limit 1", {"cost": ALL_COST}),
    C(
        "h10-table-star-using",
        "select diagnosis.*, treatment.treatmentname from diagnosis join treatment using (patientunitstayid)",
        {"diagnosis": ALL_DIAGNOSIS, "treatment": {"treatmentname", "patientunitstayid"}},
    ),
    C(
        "h11-star-alias-filter",
        "select * from intakeoutput i where i.cellvaluenumeric > 0",
        {"intakeoutput": ALL_INTAKEOUTPUT},
    ),
    C(
        "h12-star-and-column",
        "select *, vitalperiodic.heartrate from vitalperiodic",
        {"vitalperiodic": ALL_VITALPERIODIC},
    ),
    C(
        "h13-star-medication",
        "select * from medication where medication.drugname like 'insulin%'",
        {"medication": ALL_MEDICATION},
    ),
    # -- compound queries ------------------------------------------------------------------
    C(
        "i01-union",
        "select drugname from medication union select drugname from allergy",
        {"medication": {"drugname"}, "allergy": {"drugname"}},
    ),
    C(
        "i02-union-all",
        "select labname from lab where labresult > 5 union all select treatmentname from treatment",
        {"lab": {"labname", "labresult"}, "treatment": {"treatmentname"}},
    ),
    C(
        "i03-intersect",
        "select patientunitstayid from diagnosis intersect select patientunitstayid from treatment",
        {"diagnosis": {"patientunitstayid"}, "treatment": {"patientunitstayid"}},
    ),
    C(
        "i04-except",
        "select patientunitstayid from patient except select patientunitstayid from allergy",
        {"patient": {"patientunitstayid"}, "allergy": {"patientunitstayid"}},
    ),
    C(
        "i05-union-order-alias",
        "select labname as name from lab union select drugname from medication order by name limit 10",
        {"lab": {"labname"}, "medication": {"drugname"}},
    ),
    C(
        "i06-union-in-derived",
        "select count(*) from (select uniquepid from patient union select uniquepid from cost)",
        {"patient": {"uniquepid"}, "cost": {"uniquepid"}},
    ),
    C(
        "i07-union-in-subquery",
        "select gender from patient where patientunitstayid in (select patientunitstayid from lab union select patientunitstayid from microlab)",
        {
            "patient": {"gender", "patientunitstayid"},
            "lab": {"patientunitstayid"},
            "microlab": {"patientunitstayid"},
        },
    ),
    C(
        "i08-three-branches",
        "select organism from microlab union select allergyname from allergy except select diagnosisname from diagnosis",
        {"microlab": {"organism"}, "allergy": {"allergyname"}, "diagnosis": {"diagnosisname"}},
    ),
    # -- comments, spacing, casing, quoting ------------------------------------------------
    C(
        "j01-line-comments",
        "-- top labs\nselect lab.labname from lab -- trailing\nwhere lab.labresult > 1",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "j02-block-comments",
        "/* patient count */ select count(*) from /* table */ patient",
        {"patient": set()},
    ),
    C(
        "j03-upper-case",
        "SELECT DISTINCT Patient.Gender FROM PATIENT WHERE Patient.UniquePid = '002-1'",
        {"patient": {"gender", "uniquepid"}},
    ),
    C(
        "j04-odd-whitespace",
        "select\n\tlab.labname\n,\n  lab.labresult\nfrom\n\n  lab\n  where lab.labresult>=3",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "j05-double-quoted-names",
        'select "labresult" from "lab" where "labname" = \'chloride\'',
        {"lab": {"labresult", "labname"}},
    ),
    C(
        "j06-brackets-backticks",
        "select [drugname], `dosage` from [medication]",
        {"medication": {"drugname", "dosage"}},
    ),
    C("j07-quoted-alias-case", 'select l."LABRESULT" from LAB as "L"', {"lab": {"labresult"}}),
    C(
        "j08-sql-in-string",
        "select lab.labname from lab where lab.labname = 'select * from patient'",
        {"lab": {"labname"}},
    ),
    C(
        "j09-comment-in-string",
        "select lab.labname from lab where lab.labname = '-- not a comment' and lab.labresult > 0",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "j10-escaped-quote",
        "select lab.labname from lab where lab.labname = 'it''s'",
        {"lab": {"labname"}},
    ),
    C(
        "j11-mixed-case",
        "SeLeCt CoUnT(*) FrOm TrEaTmEnT wHeRe TrEaTmEnTnAmE lIkE '%Ventilation%'",
        {"treatment": {"treatmentname"}},
    ),
    C(
        "j12-comment-glued",
        "select labname--comment directly after\nfrom lab",
        {"lab": {"labname"}},
    ),
    C("j13-empty-block-comments", "select/**/labname/**/from/**/lab", {"lab": {"labname"}}),
    C("j14-padding-semicolon", "  \n select patient.age from patient ;  ", {"patient": {"age"}}),
    C(
        "j15-quoted-alias-with-space",
        'select patient.uniquepid as "patient id" from patient order by "patient id"',
        {"patient": {"uniquepid"}},
    ),
    C("j16-spaces-around-dot", "select lab . labname from lab", {"lab": {"labname"}}),
    C("j17-parenthesized-table", "select labresult from (lab)", {"lab": {"labresult"}}),
    # -- several statements ----------------------------------------------------------------
    C(
        "k01-two-statements",
        "select gender from patient; select labname from lab",
        {"patient": {"gender"}, "lab": {"labname"}},
    ),
    C(
        "k02-empty-statements",
        "select count(*) from lab;;select treatmentname from treatment;",
        {"lab": set(), "treatment": {"treatmentname"}},
    ),
    C("k03-trailing-comment-statement", "select 1; -- just a comment after", {}),
    C(
        "k04-comment-between",
        "select drugname from medication; /* second */ select * from allergy where allergyname = 'latex'",
        {"medication": {"drugname"}, "allergy": ALL_ALLERGY},
    ),
    # -- primary keys ----------------------------------------------------------------------
    C(
        "l01-labid",
        "select lab.labid from lab where lab.labname = 'wbc x 1000'",
        {"lab": {"labid", "labname"}},
    ),
    C(
        "l02-treatmentid",
        "select count(distinct treatmentid) from treatment",
        {"treatment": {"treatmentid"}},
    ),
    C(
        "l03-medicationid",
        "select max(medication.medicationid) from medication",
        {"medication": {"medicationid"}},
    ),
    C(
        "l04-diagnosisid",
        "select d.diagnosisid, d.icd9code from diagnosis d",
        {"diagnosis": {"diagnosisid", "icd9code"}},
    ),
    C(
        "l05-microlabid-using",
        "select microlabid from microlab join patient using (patientunitstayid)",
        {"microlab": {"microlabid", "patientunitstayid"}, "patient": {"patientunitstayid"}},
    ),
    C(
        "l06-costid",
        "select costid from cost where cost.eventtype = 'lab'",
        {"cost": {"costid", "eventtype"}},
    ),
    C(
        "l07-two-ids",
        "select intakeoutputid, vitalperiodicid from intakeoutput, vitalperiodic",
        {"intakeoutput": {"intakeoutputid"}, "vitalperiodic": {"vitalperiodicid"}},
    ),
    C(
        "l08-allergyid-order",
        "select allergyid from allergy order by allergytime",
        {"allergy": {"allergyid", "allergytime"}},
    ),
    # -- result-column aliases -------------------------------------------------------------
    C(
        "m01-alias-in-where",
        "select labresult * 2 as doubled from lab where doubled > 10",
        {"lab": {"labresult"}},
    ),
    C(
        "m02-alias-in-order",
        "select count(*) as cnt, labname from lab group by labname order by cnt desc limit 1",
        {"lab": {"labname"}},
    ),
    C("m03-short-alias", "select patient.age as a from patient order by a", {"patient": {"age"}}),
    C(
        "m04-alias-named-like-other-tables-column",
        "select drugname as labname from medication order by labname",
        {"medication": {"drugname"}},
    ),
    # Over-approximation: SQLite orders by the alias, the reader also reports the real column.
    C(
        "m05-alias-shadows-real-column",
        "select lab.labresult as labname from lab order by labname",
        {"lab": {"labresult", "labname"}},
    ),
    C(
        "m06-alias-in-group",
        "select treatmentname as tn, count(*) from treatment group by tn having count(*) > 2",
        {"treatment": {"treatmentname"}},
    ),
    # -- miscellaneous expressions ---------------------------------------------------------
    C(
        "n01-in-and-not-like",
        "select labname from lab where labresult in (1.5, 2.5) and labname not like 'a%'",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "n02-or-glob",
        "select lab.labname from lab where lab.labresult is null or lab.labresulttime glob '2104*'",
        {"lab": {"labname", "labresult", "labresulttime"}},
    ),
    C(
        "n03-abs",
        "select abs(vitalperiodic.systemicmean - 70) from vitalperiodic",
        {"vitalperiodic": {"systemicmean"}},
    ),
    C(
        "n04-concat",
        "select patient.uniquepid || '-' || patient.patienthealthsystemstayid from patient",
        {"patient": {"uniquepid", "patienthealthsystemstayid"}},
    ),
    C(
        "n05-placeholder",
        "select labname from lab where labresult > ?",
        {"lab": {"labname", "labresult"}},
    ),
    C(
        "n06-named-parameter",
        "select cellpath from intakeoutput where cellvaluenumeric between ? and :hi",
        {"intakeoutput": {"cellpath", "cellvaluenumeric"}},
    ),
    C(
        "n07-collate",
        "select labname collate nocase from lab order by labname collate nocase",
        {"lab": {"labname"}},
    ),
    C(
        "n08-typeof-quote",
        "select typeof(labresult), quote(labname) from lab",
        {"lab": {"labresult", "labname"}},
    ),
    C(
        "n09-indexed-by",
        "select count(*) from lab indexed by lab_idx where labname = 'mcv'",
        {"lab": {"labname"}},
    ),
    C("n10-json-extract", "select json_extract(labname, '$.a') from lab", {"lab": {"labname"}}),
    C(
        "n11-random-order",
        "select lab.labresult from lab order by random() limit 1",
        {"lab": {"labresult"}},
    ),
    C("n12-printf", "select printf('%.2f', avg(labresult)) from lab", {"lab": {"labresult"}}),
    C(
        "n13-string-that-looks-like-age",
        "select count(*) from patient where patient.age = '> 89'",
        {"patient": {"age"}},
    ),
    C(
        "n14-min-max-filters",
        "select max(patient.admissionheight), min(patient.admissionheight) from patient where patient.gender = 'male' and patient.ethnicity <> 'caucasian'",
        {"patient": {"admissionheight", "gender", "ethnicity"}},
    ),
    C(
        "n15-scalar-order-limit",
        "select p.gender from patient p where p.uniquepid = (select c.uniquepid from cost c order by c.cost desc limit 1)",
        {"patient": {"gender", "uniquepid"}, "cost": {"uniquepid", "cost"}},
    ),
    C(
        "n16-distinct-recent",
        "select distinct treatment.treatmentname from treatment where treatment.patientunitstayid in (select patient.patientunitstayid from patient where patient.uniquepid = '002-39247') and datetime(treatment.treatmenttime) >= datetime(current_time, '-5 year')",
        {
            "treatment": {"treatmentname", "patientunitstayid", "treatmenttime"},
            "patient": {"patientunitstayid", "uniquepid"},
        },
    ),
    C(
        "n17-not-between",
        "select count(*) from vitalperiodic where vitalperiodic.sao2 not between 92 and 100",
        {"vitalperiodic": {"sao2"}},
    ),
    C(
        "n18-exists-in-select-list",
        "select exists (select 1 from allergy where allergy.allergyname = 'iodine')",
        {"allergy": {"allergyname"}},
    ),
]

B = BadSql

UNREADABLE: list[BadSql] = [
    # -- not SQL the parser can read -------------------------------------------------------
    B("u01-empty", "", "unparsable_sql"),
    B("u02-only-comment", "   -- nothing here", "unparsable_sql"),
    B("u03-misspelled-keyword", "selec labname from lab", "unparsable_sql"),
    B("u04-unbalanced-paren", "select labname from lab where (labresult > 1", "unparsable_sql"),
    B(
        "u05-unterminated-string",
        "select labname from lab where labname = 'unterminated",
        "unparsable_sql",
    ),
    B("u06-dangling-comparison", "select labname from lab where labresult >", "unparsable_sql"),
    B("u06b-dangling-limit", "select labname from lab limit", "unparsable_sql"),
    # -- not a read ------------------------------------------------------------------------
    B("u07-insert", "insert into lab (labname) values ('x')", "unsupported_statement"),
    B("u08-update", "update patient set age = '0'", "unsupported_statement"),
    B("u09-delete", "delete from allergy", "unsupported_statement"),
    B("u10-drop", "drop table patient", "unsupported_statement"),
    B("u11-create-as-select", "create table t as select * from lab", "unsupported_statement"),
    B("u12-alter", "alter table lab add column x text", "unsupported_statement"),
    B("u13-attach", "attach database '/tmp/x.db' as other", "unsupported_statement"),
    B("u14-pragma", "pragma table_info(lab)", "unsupported_statement"),
    B("u15-replace", "replace into lab values (1, 'a', 1, 1, '2104')", "unsupported_statement"),
    B("u16-read-then-drop", "select labname from lab; drop table lab", "unsupported_statement"),
    B("u17-explain", "explain query plan select * from lab", "unsupported_statement"),
    B("u18-vacuum", "vacuum", "unsupported_statement"),
    B("u19-transaction", "begin; select 1; commit", "unsupported_statement"),
    B("u20-bare-values", "values (1)", "unsupported_statement"),
    B("u21-read-then-attach", "SELECT * FROM lab; ATTACH 'x' AS y", "unsupported_statement"),
    # -- constructs the reader does not model ----------------------------------------------
    B("u22-json-each", "select * from json_each('[1,2]')", "unsupported_statement"),
    B("u23-pragma-function", "select * from pragma_table_info('lab')", "unsupported_statement"),
    B("u24-load-extension", "select load_extension('/tmp/evil')", "unsupported_statement"),
    B("u25-values-in-from", "select * from (values (1, 2))", "unsupported_statement"),
    B("u26-star-in-max", "select max(*) from lab", "unsupported_statement"),
    B("u27-four-part-name", "select a.b.c.d from lab", "unsupported_statement"),
    B("u28-table-alias-columns", "select labname from lab as l(a)", "unsupported_statement"),
    B(
        "u29-cte-arity",
        "with x(a, b) as (select labname from lab) select a from x",
        "unsupported_statement",
    ),
    B("u30-user-function", "select my_udf(labname) from lab", "unsupported_statement"),
    # -- tables that are not eICU's --------------------------------------------------------
    B("u31-sqlite-master", "select name from sqlite_master", "unknown_table"),
    B("u32-plural-table", "select * from patients", "unknown_table"),
    B("u33-other-schema", "select * from other.lab", "unknown_table"),
    B("u34-temp-qualified-column", "select temp.lab.labname from lab", "unknown_table"),
    B("u35-qualifier-not-in-scope", "select x.labname from lab", "unknown_table"),
    B("u36-no-from", "select patient.gender where patient.uniquepid = '1'", "unknown_table"),
    B(
        "u37-unknown-in-subquery",
        "select * from lab where labresult > (select max(labresult) from labs)",
        "unknown_table",
    ),
    B(
        "u38-alias-of-other-scope",
        "select p.gender from patient p where p.age > (select avg(q.age) from patient)",
        "unknown_table",
    ),
    B(
        "u39-table-name-hidden-by-alias",
        "select count(*) from lab l where l.labid in (select lab.labid from lab l2)",
        "unknown_table",
    ),
    # -- columns that are not in scope -----------------------------------------------------
    B("u40-plural-column", "select labresults from lab", "unknown_column"),
    B("u41-misspelled-qualified", "select lab.labrseult from lab", "unknown_column"),
    B("u42-not-a-column", "select ssn from patient", "unknown_column"),
    B("u43-rowid", "select rowid from lab", "unknown_column"),
    B(
        "u44-derived-lacks-column",
        "select t1.c2 from (select labname as c1 from lab) t1",
        "unknown_column",
    ),
    B(
        "u45-cte-lacks-column",
        "with c as (select labname from lab) select labresult from c",
        "unknown_column",
    ),
    B(
        "u46-double-quoted-text",
        'select labname from lab where labname = "sodium"',
        "unknown_column",
    ),
    B(
        "u47-in-table-name",
        "select labname from lab where patientunitstayid in lab",
        "unknown_column",
    ),
    B(
        "u48-using-missing",
        "select diagnosisname from diagnosis join treatment using (labname)",
        "unknown_column",
    ),
    B("u49-column-of-other-table", "select lab.gender from lab", "unknown_column"),
    B(
        "u50-alias-not-visible-in-subquery",
        "select labname as n from lab where exists (select 1 from treatment where treatmentname = n)",
        "unknown_column",
    ),
]
