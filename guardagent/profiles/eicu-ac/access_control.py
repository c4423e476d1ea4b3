# Guard program for EHRAgent access control (general: the policy is a literal, the event is
# read with toolbox extractors, so the same program guards every event of this request).

# Step 1: the policy of the guard request, as data.
PERMISSIONS = {
    "physician": {
        "allergy": ["patientunitstayid", "drugname", "allergyname", "allergytime"],
        "diagnosis": ["patientunitstayid", "icd9code", "diagnosisname", "diagnosistime"],
        "lab": ["patientunitstayid", "labname", "labresult", "labresulttime"],
        "medication": ["patientunitstayid", "drugname", "dosage", "routeadmin",
                       "drugstarttime", "drugstoptime"],
        "microlab": ["patientunitstayid", "culturesite", "organism", "culturetakentime"],
        "patient": ["patientunitstayid", "patienthealthsystemstayid", "gender", "age",
                    "ethnicity", "hospitalid", "wardid", "admissionheight",
                    "hospitaladmitsource", "hospitaldischargestatus", "admissionweight",
                    "dischargeweight", "uniquepid", "hospitaladmittime", "unitadmittime",
                    "unitdischargetime", "hospitaldischargetime"],
        "treatment": ["patientunitstayid", "treatmentname", "treatmenttime"],
        "vitalperiodic": ["patientunitstayid", "temperature", "sao2", "heartrate",
                          "respiration", "systemicsystolic", "systemicdiastolic",
                          "systemicmean", "observationtime"],
    },
    "nursing": {
        "allergy": ["patientunitstayid", "drugname", "allergyname", "allergytime"],
        "intakeoutput": ["patientunitstayid", "cellpath", "celllabel", "cellvaluenumeric",
                         "intakeoutputtime"],
        "lab": ["patientunitstayid", "labname", "labresult", "labresulttime"],
        "medication": ["patientunitstayid", "drugname", "dosage", "routeadmin",
                       "drugstarttime", "drugstoptime"],
        "microlab": ["patientunitstayid", "culturesite", "organism", "culturetakentime"],
        "patient": ["patientunitstayid", "patienthealthsystemstayid", "gender", "age",
                    "ethnicity", "hospitalid", "wardid", "admissionheight",
                    "hospitaladmitsource", "hospitaldischargestatus", "admissionweight",
                    "dischargeweight", "uniquepid", "hospitaladmittime", "unitadmittime",
                    "unitdischargetime", "hospitaldischargetime"],
        "treatment": ["patientunitstayid", "treatmentname", "treatmenttime"],
        "vitalperiodic": ["patientunitstayid", "temperature", "sao2", "heartrate",
                          "respiration", "systemicsystolic", "systemicdiastolic",
                          "systemicmean", "observationtime"],
    },
    "general administration": {
        "cost": ["uniquepid", "patienthealthsystemstayid", "eventtype", "eventid",
                 "chargetime", "cost"],
        "lab": ["patientunitstayid", "labresulttime"],
        "medication": ["patientunitstayid", "drugname", "drugstarttime", "drugstoptime"],
        "patient": ["patientunitstayid", "patienthealthsystemstayid", "hospitalid", "wardid",
                    "hospitaladmitsource", "hospitaldischargestatus", "uniquepid",
                    "hospitaladmittime", "unitadmittime", "unitdischargetime",
                    "hospitaldischargetime"],
        "treatment": ["patientunitstayid", "treatmentname", "treatmenttime"],
    },
}

# Step 2: who asks (from the agent input only) and what the agent's last code reads.
role = parse_identity(agent_input)
accessed = ehr_accessed_columns(agent_output)

# Steps 3-4: compare with the role's permissions and give the verdict.
if role not in PERMISSIONS:
    deny(accessed, "unknown identity '" + role + "': no access rights are defined for it")
else:
    blocked = check_access(accessed, PERMISSIONS[role])
    if blocked:
        deny(blocked, "the role '" + role + "' may not access " + ", ".join(
            [table + "." + col for table in sorted(blocked) for col in blocked[table]]))
    else:
        allow("every column the agent's code reads is accessible to the role '" + role + "'")
