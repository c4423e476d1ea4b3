"""The `assign` call: strict types, one assignment per predicate, JSON across the boundary."""

from __future__ import annotations

import json

import pytest

from guardagent.policy.recorder import ASSIGN_NAMES, PredicateError, PredicateRecorder, normalize


def test_assignments_are_recorded_as_json():
    rec = PredicateRecorder()
    rec.assign("user_consent", True)
    rec.assign("data_is_private", False, 0.8)
    rec.assign("data_is_harmful", None)
    rec.assign("exact_user_request", True, 1)
    data = json.loads(json.dumps(rec.to_json()))
    assert data == {
        "user_consent": {"value": True, "probability": None},
        "data_is_private": {"value": False, "probability": 0.8},
        "data_is_harmful": {"value": None, "probability": None},
        "exact_user_request": {"value": True, "probability": 1.0},
    }
    assert PredicateRecorder.from_json(data) == data


@pytest.mark.parametrize(
    "args, message",
    [
        (("x", 1), "value must be True, False or None"),
        (("x", "true"), "value must be True, False or None"),
        (("x", True, True), "probability must be a number"),
        (("x", True, 1.5), "probability must be in"),
        (("x", True, float("nan")), "probability must be in"),
        (("x", True, "0.9"), "probability must be a number"),
        ((1, True), "name must be a str"),
        (("9x", True), "is not a predicate name"),
        (("a b", True), "is not a predicate name"),
        (("", True), "is not a predicate name"),
    ],
)
def test_wrong_types_are_refused(args, message):
    with pytest.raises(PredicateError, match=message):
        PredicateRecorder().assign(*args)


def test_a_second_assignment_is_an_error_not_an_override():
    rec = PredicateRecorder()
    rec.assign("x", True)
    with pytest.raises(PredicateError, match="already assigned"):
        rec.assign("x", False)
    assert rec.to_json()["x"]["value"] is True


def test_pretend_booleans_are_refused():
    class Truthy(int):
        def __bool__(self) -> bool:
            return True

    with pytest.raises(PredicateError):
        PredicateRecorder().assign("x", Truthy(1))


@pytest.mark.parametrize(
    "raw",
    [
        [],
        {"x": True},
        {"x": {"value": True}},
        {"x": {"value": True, "probability": None, "extra": 1}},
        {"x": {"value": 1, "probability": None}},
        {"9": {"value": True, "probability": None}},
    ],
)
def test_from_json_revalidates_what_a_child_sent(raw):
    with pytest.raises(PredicateError):
        PredicateRecorder.from_json(raw)


def test_the_toolbox_binds_assign_to_the_recorder():
    rec = PredicateRecorder()
    box = rec.toolbox()
    assert box.names == ASSIGN_NAMES
    box.functions()["assign"]("ok", True)
    assert rec.to_json() == {"ok": {"value": True, "probability": None}}
    assert "Give a predicate of the policy model its value" in next(iter(box)).doc


def test_normalize_accepts_plain_values_and_assignments():
    assert normalize({"a": True, "b": None, "c": {"value": False, "probability": 0.5}}) == {
        "a": {"value": True, "probability": None},
        "b": {"value": None, "probability": None},
        "c": {"value": False, "probability": 0.5},
    }
