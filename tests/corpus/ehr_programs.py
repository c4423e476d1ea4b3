"""Hand-written EHRAgent-style Python programs with the base columns each reads, written by hand.

Each entry: (id, code, {table: {columns}}). Written for this suite in the style of EHRAgent's
code (LoadDB / FilterDB / GetValue / SQLInterpreter / Calendar and ordinary Python); none is
taken from the benchmark logs.
"""

from __future__ import annotations

P = "patient_db = LoadDB('patient')\n"
F = "fp = FilterDB(patient_db, 'uniquepid=002-1')\nsid = GetValue(fp, 'patientunitstayid')\n"

PROGRAMS: list[tuple[str, str, dict[str, set[str]]]] = [
    ("load only", "db = LoadDB('lab')\nanswer = len(db)", {"lab": set()}),
    ("getvalue", "db = LoadDB('lab')\nanswer = GetValue(db, 'labname')", {"lab": {"labname"}}),
    (
        "getvalue agg",
        "db = LoadDB('lab')\nanswer = GetValue(db, 'labresult, max')",
        {"lab": {"labresult"}},
    ),
    (
        "getvalue list",
        "db = LoadDB('cost')\nanswer = GetValue(db, 'cost, list')",
        {"cost": {"cost"}},
    ),
    (
        "filter eq",
        "db = LoadDB('medication')\nf = FilterDB(db, 'drugname=aspirin')\nanswer = len(f)",
        {"medication": {"drugname"}},
    ),
    (
        "filter and",
        "db = LoadDB('lab')\nf = FilterDB(db, 'labname=bun||labresult>20')\nanswer = len(f)",
        {"lab": {"labname", "labresult"}},
    ),
    (
        "filter extrema",
        "db = LoadDB('vitalperiodic')\nf = FilterDB(db, 'max(observationtime)')\n"
        "answer = GetValue(f, 'heartrate')",
        {"vitalperiodic": {"observationtime", "heartrate"}},
    ),
    (
        "filter min",
        "db = LoadDB('patient')\nf = FilterDB(db, 'min(hospitaladmittime)')\n"
        "answer = GetValue(f, 'age')",
        {"patient": {"hospitaladmittime", "age"}},
    ),
    (
        "filter ops",
        "db = LoadDB('intakeoutput')\nf = FilterDB(db, 'cellvaluenumeric>=1||"
        "cellvaluenumeric<=9||celllabel!=urine||intakeoutputtime<2104')\nanswer = len(f)",
        {"intakeoutput": {"cellvaluenumeric", "celllabel", "intakeoutputtime"}},
    ),
    (
        "filter in",
        "db = LoadDB('treatment')\nf = FilterDB(db, 'patientunitstayid in [1, 2]')\n"
        "answer = len(f)",
        {"treatment": {"patientunitstayid"}},
    ),
    (
        "filter like",
        "db = LoadDB('diagnosis')\nf = FilterDB(db, 'diagnosisname like %sepsis%')\n"
        "answer = len(f)",
        {"diagnosis": {"diagnosisname"}},
    ),
    ("patient chain", P + F + "answer = sid", {"patient": {"uniquepid", "patientunitstayid"}}),
    (
        "two tables",
        P + F + "lab = LoadDB('lab')\nf = FilterDB(lab, 'patientunitstayid={}'.format"
        "(sid))\nanswer = GetValue(f, 'labresult, mean')",
        {"patient": {"uniquepid", "patientunitstayid"}, "lab": {"patientunitstayid", "labresult"}},
    ),
    (
        "format named",
        "db = LoadDB('lab')\nf = FilterDB(db, 'labname={name}'.format(name='bun'))\n"
        "answer = len(f)",
        {"lab": {"labname"}},
    ),
    (
        "format indexed",
        "db = LoadDB('lab')\nf = FilterDB(db, '{0}=bun||{1}>3'.format('labname', "
        "'labresult'))\nanswer = len(f)",
        {"lab": {"labname", "labresult"}},
    ),
    (
        "fstring value",
        "x = 5\ndb = LoadDB('lab')\nf = FilterDB(db, f'patientunitstayid={x}')\nanswer = len(f)",
        {"lab": {"patientunitstayid"}},
    ),
    (
        "fstring column",
        "c = 'labname'\ndb = LoadDB('lab')\nf = FilterDB(db, f'{c}=bun')\nanswer = len(f)",
        {"lab": {"labname"}},
    ),
    (
        "percent",
        "db = LoadDB('lab')\nf = FilterDB(db, 'labname=%s' % 'bun')\nanswer = len(f)",
        {"lab": {"labname"}},
    ),
    (
        "percent tuple",
        "db = LoadDB('lab')\nf = FilterDB(db, '%s=%s' % ('labname', 'bun'))\nanswer = len(f)",
        {"lab": {"labname"}},
    ),
    (
        "concat",
        "db = LoadDB('lab')\nf = FilterDB(db, 'lab' + 'name=' + 'bun')\nanswer = len(f)",
        {"lab": {"labname"}},
    ),
    (
        "augmented concat",
        "q = 'labname=bun'\nq += '||labresult>1'\ndb = LoadDB('lab')\n"
        "answer = len(FilterDB(db, q))",
        {"lab": {"labname", "labresult"}},
    ),
    ("str call", "db = LoadDB('lab')\nanswer = GetValue(db, str('labname'))", {"lab": {"labname"}}),
    (
        "parenthesised",
        "db = LoadDB(('lab'))\nanswer = GetValue((db), ('labname'))",
        {"lab": {"labname"}},
    ),
    (
        "reassignment",
        "db = LoadDB('lab')\ndb = LoadDB('cost')\nanswer = GetValue(db, 'cost')",
        {"lab": set(), "cost": {"cost"}},
    ),
    (
        "alias",
        "a = LoadDB('allergy')\nb = a\nanswer = GetValue(b, 'allergyname')",
        {"allergy": {"allergyname"}},
    ),
    (
        "tuple assign",
        "a, b = LoadDB('allergy'), LoadDB('microlab')\nanswer = GetValue(b, 'organism')",
        {"allergy": set(), "microlab": {"organism"}},
    ),
    (
        "branch union",
        "if x:\n    t = LoadDB('lab')\nelse:\n    t = LoadDB('treatment')\n"
        "answer = GetValue(t, 'patientunitstayid')",
        {"lab": {"patientunitstayid"}, "treatment": {"patientunitstayid"}},
    ),
    (
        "loop over ids",
        P + "ids = GetValue(patient_db, 'patientunitstayid, list')\n"
        "m = LoadDB('medication')\nout = []\nfor i in ids:\n"
        "    out.append(GetValue(FilterDB(m, 'patientunitstayid={}'.format(i)), 'dosage'))\n"
        "answer = out",
        {"patient": {"patientunitstayid"}, "medication": {"patientunitstayid", "dosage"}},
    ),
    (
        "loop over names",
        "db = LoadDB('vitalperiodic')\nfor c in ['sao2', 'heartrate']:\n"
        "    v = GetValue(db, c + ', max')",
        {"vitalperiodic": {"sao2", "heartrate"}},
    ),
    (
        "comprehension",
        "db = LoadDB('vitalperiodic')\nanswer = [GetValue(db, c) for c in "
        "('respiration', 'temperature')]",
        {"vitalperiodic": {"respiration", "temperature"}},
    ),
    (
        "dict lookup",
        "cols = {'hr': 'heartrate'}\ndb = LoadDB('vitalperiodic')\n"
        "answer = GetValue(db, cols['hr'])",
        {"vitalperiodic": {"heartrate"}},
    ),
    (
        "helper def",
        "def last(t, c):\n    return GetValue(FilterDB(t, 'max(labresulttime)'), c)\n"
        "answer = last(LoadDB('lab'), 'labname')",
        {"lab": {"labresulttime", "labname"}},
    ),
    (
        "helper kwargs",
        "def get(table, column):\n    return GetValue(LoadDB(table), column)\n"
        "answer = get(column='drugname', table='medication')",
        {"medication": {"drugname"}},
    ),
    (
        "lambda",
        "g = lambda t: GetValue(t, 'culturesite')\nanswer = g(LoadDB('microlab'))",
        {"microlab": {"culturesite"}},
    ),
    ("subscript", "db = LoadDB('lab')\nanswer = db['labresult'].max()", {"lab": {"labresult"}}),
    (
        "subscript list",
        "db = LoadDB('lab')\nanswer = db[['labname', 'labresult']]",
        {"lab": {"labname", "labresult"}},
    ),
    ("attribute column", "db = LoadDB('patient')\nanswer = db.age.mean()", {"patient": {"age"}}),
    (
        "mask",
        "db = LoadDB('lab')\nsub = db[db['labname'] == 'bun']\nanswer = sub['labresult'].max()",
        {"lab": {"labname", "labresult"}},
    ),
    (
        "loc columns",
        "db = LoadDB('lab')\nanswer = db.loc[db['labname'] == 'bun', 'labresult']",
        {"lab": {"labname", "labresult"}},
    ),
    (
        "loc rows only",
        "db = LoadDB('allergy')\nanswer = db.loc[0]",
        {"allergy": {"patientunitstayid", "drugname", "allergyname", "allergytime", "allergyid"}},
    ),
    (
        "iloc",
        "db = LoadDB('microlab')\nanswer = db.iloc[0, 1]",
        {
            "microlab": {
                "patientunitstayid",
                "culturesite",
                "organism",
                "culturetakentime",
                "microlabid",
            }
        },
    ),
    (
        "len and empty",
        "db = LoadDB('cost')\nif not db.empty and len(db) > 0:\n    answer = 1",
        {"cost": set()},
    ),
    (
        "rows",
        "db = LoadDB('treatment')\nn = 0\nfor row in db:\n    if row['treatmentname'] == 'x':\n"
        "        n += 1\nanswer = n",
        {"treatment": {"treatmentname"}},
    ),
    (
        "iterrows",
        "db = LoadDB('treatment')\nfor i, row in db.iterrows():\n    t = row['treatmenttime']",
        {"treatment": {"treatmenttime"}},
    ),
    (
        "sort_values",
        "db = LoadDB('lab')\ns = db.sort_values('labresulttime')\nanswer = s['labname']",
        {"lab": {"labresulttime", "labname"}},
    ),
    (
        "groupby",
        "db = LoadDB('cost')\ng = db.groupby('eventtype')\nanswer = len(g)",
        {"cost": {"eventtype"}},
    ),
    (
        "print table",
        "db = LoadDB('allergy')\nprint(db)",
        {"allergy": {"patientunitstayid", "drugname", "allergyname", "allergytime", "allergyid"}},
    ),
    (
        "answer is a table",
        "answer = FilterDB(LoadDB('treatment'), 'treatmentname=x')",
        {"treatment": {"treatmentname", "patientunitstayid", "treatmenttime", "treatmentid"}},
    ),
    (
        "sql call",
        "answer = SQLInterpreter(\"select count(*) from diagnosis where icd9code = '1'\")",
        {"diagnosis": {"icd9code"}},
    ),
    (
        "sql brackets",
        "answer = SQLInterpreter[select max(labresult) from lab where labname = 'bun']",
        {"lab": {"labresult", "labname"}},
    ),
    (
        "sql format value",
        "pid = GetValue(LoadDB('patient'), 'patientunitstayid')\n"
        "answer = SQLInterpreter('select drugname from medication where patientunitstayid = {}'"
        ".format(pid))",
        {"patient": {"patientunitstayid"}, "medication": {"drugname", "patientunitstayid"}},
    ),
    (
        "sql quoted value",
        "u = GetValue(LoadDB('patient'), 'uniquepid')\nanswer = SQLInterpreter("
        "\"select age from patient where uniquepid = '{}'\".format(u))",
        {"patient": {"uniquepid", "age"}},
    ),
    (
        "sql variable",
        "q = 'select organism from microlab'\nanswer = SQLInterpreter(q)",
        {"microlab": {"organism"}},
    ),
    (
        "sql join",
        "answer = SQLInterpreter('select d.diagnosisname from diagnosis d join patient p "
        "on d.patientunitstayid = p.patientunitstayid where p.uniquepid = 1')",
        {
            "diagnosis": {"diagnosisname", "patientunitstayid"},
            "patient": {"patientunitstayid", "uniquepid"},
        },
    ),
    (
        "calendar",
        "d = Calendar('-1 year')\ndb = LoadDB('lab')\nf = FilterDB(db, "
        "'labresulttime>{}'.format(d))\nanswer = len(f)",
        {"lab": {"labresulttime"}},
    ),
    (
        "datetime",
        "from datetime import datetime\ndb = LoadDB('patient')\n"
        "t = GetValue(db, 'unitadmittime')\nanswer = datetime.strptime(t, '%Y-%m-%d').year",
        {"patient": {"unitadmittime"}},
    ),
    (
        "try except",
        "try:\n    db = LoadDB('lab')\n    v = GetValue(db, 'labresult')\n"
        "except Exception:\n    v = GetValue(LoadDB('cost'), 'cost')\nanswer = v",
        {"lab": {"labresult"}, "cost": {"cost"}},
    ),
    (
        "while",
        "db = LoadDB('vitalperiodic')\ni = 0\nwhile i < 3:\n"
        "    v = GetValue(db, 'systemicmean')\n    i += 1",
        {"vitalperiodic": {"systemicmean"}},
    ),
    (
        "with",
        "with open_ctx() as h:\n    answer = GetValue(LoadDB('lab'), 'labname')",
        {"lab": {"labname"}},
    ),
    (
        "walrus",
        "if (db := LoadDB('medication')) is not None:\n    answer = GetValue(db, 'routeadmin')",
        {"medication": {"routeadmin"}},
    ),
    (
        "nested filter",
        "answer = GetValue(FilterDB(FilterDB(LoadDB('lab'), 'labname=bun'), "
        "'max(labresulttime)'), 'labresult')",
        {"lab": {"labname", "labresulttime", "labresult"}},
    ),
    ("primary key", "answer = GetValue(LoadDB('lab'), 'labid')", {"lab": {"labid"}}),
    (
        "case insensitive",
        "db = LoadDB('LAB')\nanswer = GetValue(db, 'LabName')",
        {"lab": {"labname"}},
    ),
    (
        "two cells share state",
        "db = LoadDB('lab')\n# next cell\nanswer = GetValue(db, 'labname')",
        {"lab": {"labname"}},
    ),
]
